"""Item 1 (#1108): artbot's controls; the audit gives no fix for this item.

UNFIX (0.5.21, 0.5.23) removes the module-level ``patch_te_cross_entropy()`` call from
``megatron/provider.py`` (0.5.21 L33), the hook that makes TE's kernel form the target
gradient in FP32: the check must then say "reproduced". 0.5.20 has no such patch module, and
no control writes ART code into a release, so its FIX turns Transformer Engine's fused
cross-entropy off (``cross_entropy_fusion_impl = "native"``): the check must say "fixed"
because the code it reads no longer reaches TE's kernel. That shows the check can say fixed on
0.5.20; it is not a proposed fix (whether Megatron's native fusion is exact is not checked).
"""

FIX = {
    "0.5.20": [
        (
            "megatron/provider.py",
            r'(\.cross_entropy_fusion_impl = )"te"',
            r'\g<1>"native"',
        )
    ],
}
_NO_HOOK = [("megatron/provider.py", r"^patch_te_cross_entropy\(\)\n", "")]
UNFIX = {"0.5.21": _NO_HOOK, "0.5.23": _NO_HOOK}
