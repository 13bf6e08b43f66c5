"""Item 1, the release's fix rewritten without changing what it does: provider.py imports the
patch's module (``import art.megatron.te_cross_entropy as te_ce``) and calls
``te_ce.patch_te_cross_entropy()``. The check must keep the fixed verdict. artbot's control
(issue #37).
"""

KIND = "real"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/provider.py",
        r"^from art\.megatron\.te_cross_entropy import patch_te_cross_entropy\n",
        "import art.megatron.te_cross_entropy as te_ce\n",
    ),
    ("megatron/provider.py", r"^patch_te_cross_entropy\(\)\n", "te_ce.patch_te_cross_entropy()\n"),
]
EXPECT = {"zeroed-target-gradient-near-one": "fixed"}
