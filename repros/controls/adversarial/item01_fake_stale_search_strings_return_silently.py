"""Item 1, a fake fix: the patch's search text no longer matches TE's kernel (its gradient
line written as TE once had it, without the parentheses) and, not finding it, the patch returns
silently instead of raising. Run on TE 2.14.0's real kernel it changes nothing. artbot's
control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/te_cross_entropy.py",
        r"X_block = \(tl\.exp\(X_block - m\) / d - eps\) / \(n_non_ignore\)\n",
        r"X_block = (tl.exp(X_block - m) / d - eps) / n_non_ignore\n",
    ),
    (
        "megatron/te_cross_entropy.py",
        r'raise RuntimeError\("Unsupported Transformer Engine cross-entropy kernel source"\)',
        "return",
    ),
]
EXPECT = {"zeroed-target-gradient-near-one": "reproduced"}
