"""Follow-up 801, a fake fix that holds on part of the domain: old logprobs whose log-ratio
reaches 20 are replaced like missing ones, the FP32 bound, also where both logprobs are FP16
and ART's bound is 10: a log-ratio of 11 to 20 there is still clamped to e^10 and dominates the
loss. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "loss.py",
        r"~torch\.isfinite\(old_logprobs\),",
        "~torch.isfinite(old_logprobs) | (new_logprobs.detach() - old_logprobs >= 20.0),",
    ),
]
EXPECT = {"sentinel-dominates-loss": "reproduced"}
