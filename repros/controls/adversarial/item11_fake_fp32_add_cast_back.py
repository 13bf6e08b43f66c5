"""Item 11, a fake fix: every wrapper adds in FP32 and casts the sum back to the base's dtype
(``(a.float() + b.float()).to(a.dtype)``). artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/lora.py",
        "^(\\s*)return (\\w+) \\+ (\\w+), (\\w+)$",
        "\\g<1>return (\\g<2>.float() + \\g<3>.float()).to(\\g<2>.dtype), \\g<4>",
    ),
]
EXPECT = {"forward-delta-rounds-away": "reproduced"}
