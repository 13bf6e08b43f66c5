"""Follow-up 401, a fake fix that holds on part of the domain: the chunk's matmul in FP32 only
when the hidden states do not require grad (a logprob pass without training); a training step
still rounds its logits to BF16. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "unsloth/train.py",
        r"^(\s*)chunk_logits = torch\.matmul\(chunk_hs, lm_head_t\)\.float\(\)  #.*$",
        r"\g<1>if chunk_hs.requires_grad:\n"
        r"\g<1>    chunk_logits = torch.matmul(chunk_hs, lm_head_t).float()\n"
        r"\g<1>else:\n"
        r"\g<1>    chunk_logits = torch.matmul(chunk_hs.float(), lm_head_t.float())",
    ),
]
EXPECT = {"bf16-logits-on-unsloth": "reproduced"}
