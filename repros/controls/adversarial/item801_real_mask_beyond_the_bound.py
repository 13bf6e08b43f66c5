"""Follow-up 801, a real fix written unlike the suggested one: tokens whose log-ratio reaches
the bound are masked out of the loss (their weight set to 0) instead of having their old
logprob replaced, and count with a log-ratio of 0 in their sequence's mean (the sequence,
average and geometric_average levels). artbot's control (issue #37).
"""

KIND = "real"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "loss.py",
        r"(\n(\s+)prob_ratio = torch\.exp\(logprob_diff\.clamp\(-log_ratio_bound, "
        r"log_ratio_bound\)\)\n)",
        r"\g<1>\g<2>beyond = logprob_diff.detach() >= log_ratio_bound\n"
        r"\g<2>weights = weights * ~beyond\n"
        r"\g<2>logprob_diff = logprob_diff.masked_fill(beyond, 0.0)\n",
    ),
]
EXPECT = {"sentinel-dominates-loss": "fixed"}
