"""Follow-up 801, a fake fix (text that names the fix): a comment stating that old logprobs at
the bound are treated as missing, with the expression; the code is the release's. artbot's
control.
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "loss.py",
        r"^([ \t]*)(logprob_diff = new_logprobs - old_logprobs)$",
        r"\g<1># Sentinel old logprobs (log-ratio at the bound) are treated as missing:\n"
        r"\g<1># torch.where(new_logprobs.detach() - old_logprobs >= 20, new_logprobs, old)\n"
        r"\g<1>\g<2>",
    ),
]
EXPECT = {"sentinel-dominates-loss": "reproduced"}
