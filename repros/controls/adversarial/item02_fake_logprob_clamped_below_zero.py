"""Item 2, a fake fix: each logprob clamped below zero (``.clamp(max=-1e-4)``) so that none is
exactly 0, on top of the released FP32 path: near p = 1 the value is wrong and the clamp
stops the gradient (a rule that only asks "is any logprob exactly 0" passes it). artbot's
control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "unsloth/train.py",
        r"(\s*chunk_log_probs, dim=-1, index=chunk_input_ids\.unsqueeze\(-1\)\n"
        r"\s*\)\.squeeze\(-1\))",
        r"\g<1>.clamp(max=-1e-4)",
    ),
]
EXPECT = {"zeroed-logprob-and-gradient": "reproduced"}
