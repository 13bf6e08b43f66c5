"""Item 1, a fake fix: the patch is imported under an alias, the alias is rebound to a function
that does nothing, and that is what provider.py calls. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/provider.py",
        r"^from art\.megatron\.te_cross_entropy import patch_te_cross_entropy\n",
        "from art.megatron.te_cross_entropy import patch_te_cross_entropy as _fp32_target_grad\n"
        "_fp32_target_grad = print\n",
    ),
    ("megatron/provider.py", r"^patch_te_cross_entropy\(\)\n", "_fp32_target_grad()\n"),
]
EXPECT = {"zeroed-target-gradient-near-one": "reproduced"}
