"""Follow-up 401, a fake fix that holds on part of the domain: the matmul in FP32 only while
the chunk's logits stay under 2**20 (memory), so a chunk over a 151,936-id vocabulary still
rounds them to BF16. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "unsloth/train.py",
        r"^(\s*)chunk_logits = torch\.matmul\(chunk_hs, lm_head_t\)\.float\(\)  #.*$",
        r"\g<1>wide = chunk_hs.shape[0] * chunk_hs.shape[1] * lm_head_t.shape[1] <= 2**20\n"
        r"\g<1>chunk_logits = torch.matmul(\n"
        r"\g<1>    chunk_hs.float() if wide else chunk_hs,\n"
        r"\g<1>    lm_head_t.float() if wide else lm_head_t,\n"
        r"\g<1>).float()",
    ),
]
EXPECT = {"bf16-logits-on-unsloth": "reproduced"}
