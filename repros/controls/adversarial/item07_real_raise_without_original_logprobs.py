"""Item 7, a real fix on 0.5.20 of the other kind the record's Expected allows: with
truncated_importance_sampling set and no original_logprobs, the call raises an error that says
so. artbot's control (issue #37).
"""

KIND = "real"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "loss.py",
        r"(\n(    )if upper_bound := experimental_config\.get\(\"truncated_importance_sampling\", "
        r"None\):\n)",
        "\\g<1>\\g<2>    if aligned_inputs.original_logprobs is None:\n"
        "\\g<2>        raise ValueError(\n"
        '\\g<2>            "truncated_importance_sampling needs original_logprobs "\n'
        '\\g<2>            "(sampler logprobs)"\n'
        "\\g<2>        )\n",
    ),
]
EXPECT = {"policy-ratio-applied-twice": "fixed"}
