"""Item 1, a fake fix: the hook's call is only a comment (``# patch_te_cross_entropy()``).

artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/provider.py",
        "^patch_te_cross_entropy\\(\\)$",
        "# patch_te_cross_entropy()  # forms the target gradient in FP32",
    ),
]
EXPECT = {"zeroed-target-gradient-near-one": "reproduced"}
