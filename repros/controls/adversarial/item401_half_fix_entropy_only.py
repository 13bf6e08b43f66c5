"""Follow-up 401, half a fix: FP32 logits for the entropy (a metric) only; the
log-probabilities the loss uses still come from the BF16 matmul. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "unsloth/train.py",
        r"^([ \t]*)# Entropy is only used as a metric\.\n",
        r"\g<1>entropy_log_probs = torch.log_softmax(\n"
        r"\g<1>    torch.matmul(chunk_hs.float(), lm_head_t.float()), dim=-1\n"
        r"\g<1>)\n\g<0>",
    ),
    (
        "unsloth/train.py",
        r"-chunk_log_probs\.exp\(\)\.mul_\(chunk_log_probs\)",
        "-entropy_log_probs.exp().mul_(entropy_log_probs)",
    ),
]
EXPECT = {"bf16-logits-on-unsloth": "reproduced"}
