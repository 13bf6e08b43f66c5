"""Follow-up 801, a real fix written unlike the suggested one: where the log-ratio reaches the
bound, the ratio is taken as 1 (the token counted as sampled under the current policy) by a
``torch.where`` on the ratio, and its log-ratio as 0 in its sequence's mean (the sequence,
average and geometric_average levels), the old logprobs left as they are. artbot's control
(issue #37).
"""

KIND = "real"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "loss.py",
        r"(\n(\s+)prob_ratio = torch\.exp\(logprob_diff\.clamp\(-log_ratio_bound, "
        r"log_ratio_bound\)\)\n)",
        r"\g<1>\g<2>beyond = logprob_diff.detach() >= log_ratio_bound\n"
        r"\g<2>prob_ratio = torch.where(beyond, torch.ones_like(prob_ratio), prob_ratio)\n"
        r"\g<2>logprob_diff = torch.where(beyond, torch.zeros_like(logprob_diff), logprob_diff)\n",
    ),
]
EXPECT = {"sentinel-dominates-loss": "fixed"}
