"""Follow-up 401, a real fix written unlike the suggested one: the chunk's logits from
``torch.einsum`` on float64 operands, stored as FP32. artbot's control (issue #37).
"""

KIND = "real"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "unsloth/train.py",
        r"^(\s*)chunk_logits = torch\.matmul\(chunk_hs, lm_head_t\)\.float\(\)  #.*$",
        r'\g<1>chunk_logits = torch.einsum("bsh,hv->bsv", chunk_hs.double(), lm_head_t.double())'
        r"\n\g<1>chunk_logits = chunk_logits.to(torch.float32)",
    ),
]
EXPECT = {"bf16-logits-on-unsloth": "fixed"}
