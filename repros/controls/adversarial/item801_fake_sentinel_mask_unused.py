"""Follow-up 801, a fake fix (a patch that does not do its work): the sentinel mask and the
replaced old logprobs are computed, into a name nothing reads; the loss uses the old ones.
artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "loss.py",
        r"^([ \t]*)(logprob_diff = new_logprobs - old_logprobs)$",
        r"\g<1>stale = new_logprobs.detach() - old_logprobs >= 20.0\n"
        r"\g<1>replaced_old_logprobs = torch.where(stale, new_logprobs.detach(), old_logprobs)\n"
        r"\g<1>\g<2>",
    ),
]
EXPECT = {"sentinel-dominates-loss": "reproduced"}
