"""Item 11, a fake fix: every wrapper adds in FP16 (``.half() + .half()``). artbot's control."""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/lora.py",
        "^(\\s*)return (\\w+) \\+ (\\w+), (\\w+)$",
        "\\g<1>return \\g<2>.half() + \\g<3>.half(), \\g<4>",
    ),
]
EXPECT = {"forward-delta-rounds-away": "reproduced"}
