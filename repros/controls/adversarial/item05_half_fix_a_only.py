"""Item 5, half a fix: ``A_T`` in FP32, ``B_T`` left in the base weight's dtype.
artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/lora.py",
        "^(\\s*self\\.A_T = torch\\.nn\\.Parameter\\(torch\\.zeros\\(a_shape, )dtype=dtype,",
        "\\g<1>dtype=torch.float32,",
    ),
    (
        "megatron/lora.py",
        "^(\\s*)out = \\(x @ a_t\\) @ b_t$",
        "\\g<1>out = (x @ a_t.to(x.dtype)) @ b_t.to(x.dtype)",
    ),
]
EXPECT = {"bf16-gradient-accumulation": "reproduced"}
