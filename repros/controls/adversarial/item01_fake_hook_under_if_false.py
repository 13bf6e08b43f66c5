"""Item 1, a fake fix: the hook's call kept in ``provider.py`` but under ``if False:``, where it
never runs. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/provider.py",
        r"^patch_te_cross_entropy\(\)$",
        "if False:  # the FP32 target gradient\n    patch_te_cross_entropy()",
    ),
]
EXPECT = {"zeroed-target-gradient-near-one": "reproduced"}
