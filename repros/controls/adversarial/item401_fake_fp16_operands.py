"""Follow-up 401, a fake fix (a precision no better than the finding asks): the matmul's
operands given as FP16. FP16 rounds the logits finer than BF16 (p90 error 0.014 nats, not
0.11) but still rounds them: the finding's bound is 1e-3. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "unsloth/train.py",
        r"torch\.matmul\(chunk_hs, lm_head_t\)\.float\(\)",
        "torch.matmul(chunk_hs.to(torch.float16), lm_head_t.to(torch.float16)).float()",
    ),
]
EXPECT = {"bf16-logits-on-unsloth": "reproduced"}
