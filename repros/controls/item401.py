"""Follow-up 401, artbot's suggested fix: the chunk's LM-head matmul in FP32 (the operands
upcast, not the result), so ``_calculate_logprobs`` returns the log-probabilities of FP32
logits of its operands. 0.5.20 (before #1109's ``.float()``) also allocates its outputs in the
hidden states' dtype (BF16): its control makes them FP32 too. (artbot's control.)
"""

_FP32_MATMUL = [
    (
        "unsloth/train.py",
        r"torch\.matmul\(chunk_hs, lm_head_t\)\.float\(\)",
        "torch.matmul(chunk_hs.float(), lm_head_t.float())",
    )
]
FIX = {
    "0.5.20": [
        ("unsloth/train.py", r"dtype=hidden_states\.dtype,", "dtype=torch.float32,"),
        (
            "unsloth/train.py",
            r"torch\.matmul\(chunk_hs, lm_head_t\)",
            "torch.matmul(chunk_hs.float(), lm_head_t.float())",
        ),
    ],
    "0.5.21": _FP32_MATMUL,
    "0.5.23": _FP32_MATMUL,
}
