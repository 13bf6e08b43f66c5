"""Item 2, a fake fix that holds on part of the domain: the logits upcast to FP32 (and an FP32
buffer) only when the hidden states do not require grad, so a training step keeps the BF16
logsumexp. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "unsloth/train.py",
        r"^(\s*)chunk_logits = torch\.matmul\(chunk_hs, lm_head_t\)  #.*$",
        r"\g<1>chunk_logits = torch.matmul(chunk_hs, lm_head_t)\n"
        r"\g<1>if not chunk_hs.requires_grad:\n"
        r"\g<1>    chunk_logits = chunk_logits.float()",
    ),
    (
        "unsloth/train.py",
        r"(log_probs = torch\.empty\(\n\s*\(batch_size, seq_len\),\n\s*)"
        r"dtype=hidden_states\.dtype,",
        r"\g<1>dtype=torch.float32,",
    ),
]
EXPECT = {"zeroed-logprob-and-gradient": "reproduced"}
