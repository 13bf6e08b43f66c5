"""Follow-up 401, a fake fix that holds on part of the domain: the operands upcast only when
they are BF16; FP16 hidden states still give FP16-rounded logits. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "unsloth/train.py",
        r"^(\s*)chunk_logits = torch\.matmul\(chunk_hs, lm_head_t\)\.float\(\)  #.*$",
        r"\g<1>if chunk_hs.dtype is torch.bfloat16:\n"
        r"\g<1>    chunk_hs, head = chunk_hs.float(), lm_head_t.float()\n"
        r"\g<1>else:\n"
        r"\g<1>    head = lm_head_t\n"
        r"\g<1>chunk_logits = torch.matmul(chunk_hs, head).float()",
    ),
]
EXPECT = {"bf16-logits-on-unsloth": "reproduced"}
