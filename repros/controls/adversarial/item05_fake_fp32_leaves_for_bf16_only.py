"""Item 5, a fake fix that holds on part of the domain: FP32 LoRA leaves only when the model is
BF16 (``torch.float32 if dtype == torch.bfloat16 else dtype``); an FP16 model still sums its
gradients in FP16. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/lora.py",
        r"^(\s*self\.[AB]_T = torch\.nn\.Parameter\(torch\.zeros\([ab]_shape, )dtype=dtype,",
        r"\g<1>dtype=torch.float32 if dtype == torch.bfloat16 else dtype,",
    ),
    (
        "megatron/lora.py",
        r"^(\s*)out = \(x @ a_t\) @ b_t$",
        r"\g<1>out = (x @ a_t.to(x.dtype)) @ b_t.to(x.dtype)",
    ),
]
EXPECT = {"bf16-gradient-accumulation": "reproduced"}
