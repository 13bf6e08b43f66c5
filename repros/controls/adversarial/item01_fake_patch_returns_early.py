"""Item 1, a fake fix (the issue's): ``patch_te_cross_entropy`` returns before its work.

The hook still calls it, the function still exists; it edits nothing. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/te_cross_entropy.py",
        "^(    )(from transformer_engine\\.common\\.triton\\.cross_entropy import)",
        "\\g<1>return\\n\\g<1>\\g<2>",
    ),
]
EXPECT = {"zeroed-target-gradient-near-one": "reproduced"}
