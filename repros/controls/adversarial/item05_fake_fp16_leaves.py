"""Item 5, a fake fix: the LoRA leaves made FP16 (cast to the input's dtype in the forward):
an FP16 ``.grad`` sums no better than FP32 would. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/lora.py",
        "^(\\s*self\\.[AB]_T = torch\\.nn\\.Parameter\\(torch\\.zeros\\([ab]_shape, )dtype=dtype,",
        "\\g<1>dtype=torch.float16,",
    ),
    (
        "megatron/lora.py",
        "^(\\s*)out = \\(x @ a_t\\) @ b_t$",
        "\\g<1>out = (x @ a_t.to(x.dtype)) @ b_t.to(x.dtype)",
    ),
]
EXPECT = {"bf16-gradient-accumulation": "reproduced"}
