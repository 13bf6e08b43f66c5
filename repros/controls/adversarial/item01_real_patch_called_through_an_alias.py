"""Item 1, the release's fix rewritten without changing what it does: provider.py imports the
patch under another name (``as _fp32_target_grad``) and calls it by that name. The check must
recognise the call by what the name is bound to and keep the fixed verdict. artbot's control
(issue #37).
"""

KIND = "real"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "megatron/provider.py",
        r"^from art\.megatron\.te_cross_entropy import patch_te_cross_entropy\n",
        "from art.megatron.te_cross_entropy import patch_te_cross_entropy as _fp32_target_grad\n",
    ),
    ("megatron/provider.py", r"^patch_te_cross_entropy\(\)\n", "_fp32_target_grad()\n"),
]
EXPECT = {"zeroed-target-gradient-near-one": "fixed"}
