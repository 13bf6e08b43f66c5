"""Item 1, a fake fix: ``provider.py`` defines its own ``patch_te_cross_entropy`` that does
nothing, just before the hook calls the name: the call no longer reaches ART's patch.
artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/provider.py",
        r"^patch_te_cross_entropy\(\)$",
        "def patch_te_cross_entropy() -> None:\n    return None\n\n\npatch_te_cross_entropy()",
    ),
]
EXPECT = {"zeroed-target-gradient-near-one": "reproduced"}
