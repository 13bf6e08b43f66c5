"""Item 1, half a fix: the patch removes TE's BF16 target step but never forms the target's
term in the FP32 block (the target gradient is then missing, not fixed). artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/te_cross_entropy.py",
        'source = source\\.replace\\(_GRADIENT, _FP32_GRADIENT\\)\\.replace\\(_TARGET, \\"\\"\\)',
        'source = source.replace(_TARGET, "")',
    ),
]
EXPECT = {"zeroed-target-gradient-near-one": "reproduced"}
