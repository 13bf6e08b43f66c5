"""Item 8, a real fix on 0.5.20 of the other kind the record's Expected allows: the step fails
with a clear error before backward when an old logprob on a trainable token is not finite or
lies more than 10 below the new one (no clamp). artbot's control (issue #37).
"""

KIND = "real"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "loss.py",
        r"\n(    )logprob_diff = new_logprobs - old_logprobs\n",
        "\n\\g<1>stale = new_logprobs.detach() - old_logprobs > 10.0\n"
        "\\g<1>if bool((~torch.isfinite(old_logprobs) | stale).any()):\n"
        '\\g<1>    raise ValueError("old logprobs must be finite and within 10 of the new '
        'logprobs on trainable tokens")\n'
        "\\g<1>logprob_diff = new_logprobs - old_logprobs\n",
    ),
]
EXPECT = {"inf-loss-nan-gradients": "fixed"}
