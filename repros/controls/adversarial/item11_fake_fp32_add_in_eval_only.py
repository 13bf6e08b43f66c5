"""Item 11, a fake fix that holds on part of the domain: the wrappers add in FP32 only in eval
mode (``not self.training``); training, the mode the audit's effect is about, still adds in
the input's dtype. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/lora.py",
        r"^(\s*)return (\w+) \+ (\w+), (\w+)$",
        r"\g<1>if self.training:\n"
        r"\g<1>    return \g<2> + \g<3>, \g<4>\n"
        r"\g<1>return \g<2>.float() + \g<3>.float(), \g<4>",
    ),
]
EXPECT = {"forward-delta-rounds-away": "reproduced"}
