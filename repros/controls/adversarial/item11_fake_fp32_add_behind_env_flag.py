"""Item 11, a fake fix that holds on part of the domain: every wrapper adds in FP32 only when
an environment flag is set (``ART_FP32_LORA_ADD``, off by default); unset, as in every run
that does not know of it, the add stays in the input's dtype. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/lora.py",
        r"^(\s*)return (\w+) \+ (\w+), (\w+)$",
        r'\g<1>wide = os.environ.get("ART_FP32_LORA_ADD", "0") == "1"\n'
        r"\g<1>dt = torch.float32 if wide else \g<2>.dtype\n"
        r"\g<1>return \g<2>.to(dt) + \g<3>.to(dt), \g<4>",
    ),
    ("megatron/lora.py", r"\A", "import os\n"),
]
EXPECT = {"forward-delta-rounds-away": "reproduced"}
