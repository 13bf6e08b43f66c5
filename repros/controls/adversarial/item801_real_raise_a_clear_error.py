"""Follow-up 801, a real fix of the other kind the record's Expected allows: the step fails with
a clear error before backward when an old logprob on a trainable token lies beyond the bound
(its log-ratio reaches it). artbot's control (issue #37).
"""

KIND = "real"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "loss.py",
        r"(\n(\s+)prob_ratio = torch\.exp\(logprob_diff\.clamp\(-log_ratio_bound, "
        r"log_ratio_bound\)\)\n)",
        "\\g<1>\\g<2>if bool((logprob_diff.detach() >= log_ratio_bound).any()):\n"
        "\\g<2>    raise ValueError(\n"
        '\\g<2>        "an old logprob lies beyond the log-ratio bound: a sentinel?"\n'
        "\\g<2>    )\n",
    ),
]
EXPECT = {"sentinel-dominates-loss": "fixed"}
