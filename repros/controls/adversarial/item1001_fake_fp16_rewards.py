"""Follow-up 1001, a fake fix (a precision no better): the rewards tensor made FP16 instead of
FP32: near-equal rewards are still one value, and its mean still an ulp off. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "tinker_native/data.py",
        r"torch\.tensor\(rewards, dtype=torch\.float32\)",
        "torch.tensor(rewards, dtype=torch.float16)",
    ),
]
EXPECT = {"near-equal-group-full-advantage": "reproduced"}
