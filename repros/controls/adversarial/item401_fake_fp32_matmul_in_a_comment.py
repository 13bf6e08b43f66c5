"""Follow-up 401, a fake fix (text that names the fix): a comment above the matmul spelling out
the FP32 matmul; the code is the release's. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "unsloth/train.py",
        r"^([ \t]*)(chunk_logits = torch\.matmul\(chunk_hs, lm_head_t\)\.float\(\))",
        r"\g<1># FP32 logits: torch.matmul(chunk_hs.float(), lm_head_t.float())\n\g<1>\g<2>",
    ),
]
EXPECT = {"bf16-logits-on-unsloth": "reproduced"}
