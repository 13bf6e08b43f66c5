"""Item 8, a fake fix that holds on part of the domain (found by the red team of issue #37):
the token log-ratio is clamped before ``exp`` only when ``importance_sampling_level`` is
"token"; at the average and geometric_average levels the unclamped token ratio is mixed in, so
an old logprob 200 below the new one gives a loss of inf. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "loss.py",
        r"^(    )prob_ratio = torch\.exp\(logprob_diff\.clamp\(-log_ratio_bound, "
        r"log_ratio_bound\)\)\n",
        "\\g<1>prob_ratio = torch.exp(\n"
        "\\g<1>    logprob_diff.clamp(-log_ratio_bound, log_ratio_bound)\n"
        '\\g<1>    if importance_sampling_level == "token"\n'
        "\\g<1>    else logprob_diff\n"
        "\\g<1>)\n",
    ),
]
EXPECT = {"inf-loss-nan-gradients": "reproduced"}
