"""Item 11, a real fix written unlike the suggested one: each wrapper names the FP32 dtype
once (``acc = torch.float32``) and adds ``base.to(acc) + delta.to(dtype=acc)``, keeping the
FP32 sum. artbot's control (issue #37).
"""

KIND = "real"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/lora.py",
        r"^(\s*)return (\w+) \+ (\w+), (\w+)$",
        r"\g<1>acc = torch.float32\n"
        r"\g<1>total = \g<2>.to(acc) + \g<3>.to(dtype=acc)\n"
        r"\g<1>return total, \g<4>",
    ),
]
EXPECT = {"forward-delta-rounds-away": "fixed"}
