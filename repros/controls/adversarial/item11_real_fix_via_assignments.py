"""Item 11, a real fix written differently from ``item11.py``: each wrapper's two operands
upcast on lines above the ``return`` (``a = a.float()``), the add made there in FP32.
artbot's control.
"""

KIND = "real"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/lora.py",
        "^(\\s*)return (\\w+) \\+ (\\w+), (\\w+)$",
        "\\g<1>\\g<2> = \\g<2>.float()\\n\\g<1>\\g<3> = \\g<3>.float()\\n\\g<1>return "
        "\\g<2> + \\g<3>, \\g<4>",
    ),
]
EXPECT = {"forward-delta-rounds-away": "fixed"}
