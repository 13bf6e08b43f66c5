"""Follow-up 401, a fake fix (a precision no better): the matmul in FP32, its result cast back
to BF16 before the upcast, so each logit is rounded to BF16 as before. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "unsloth/train.py",
        r"torch\.matmul\(chunk_hs, lm_head_t\)\.float\(\)",
        "torch.matmul(chunk_hs.float(), lm_head_t.float()).to(torch.bfloat16).float()",
    ),
]
EXPECT = {"bf16-logits-on-unsloth": "reproduced"}
