"""Follow-up 801, a real fix written unlike the suggested one: where the log-ratio reaches the
bound, the ratio is taken as 1 (the token counted as sampled under the current policy) by a
``torch.where`` on the ratio, the old logprobs left as they are. artbot's control (issue #37).
"""

KIND = "real"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "loss.py",
        r"(\n(\s+)prob_ratio = torch\.exp\(logprob_diff\.clamp\(-log_ratio_bound, "
        r"log_ratio_bound\)\)\n)",
        r"\g<1>\g<2>prob_ratio = torch.where(\n"
        r"\g<2>    logprob_diff.detach() >= log_ratio_bound,\n"
        r"\g<2>    torch.ones_like(prob_ratio),\n"
        r"\g<2>    prob_ratio,\n"
        r"\g<2>)\n",
    ),
]
EXPECT = {"sentinel-dominates-loss": "fixed"}
