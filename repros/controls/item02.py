"""Item 2 (#1109), the audit's fix: "upcast the logits to FP32 before the gather and the
logsumexp", with an FP32 logprob buffer. 0.5.21 ships it (``torch.matmul(...).float()`` and
``log_softmax``); UNFIX undoes 0.5.21's upcast and buffers, so the check is shown to say
"reproduced" on a release that fixed it.
"""

FIX = {
    "0.5.20": [
        (
            "unsloth/train.py",
            r"chunk_logits = torch\.matmul\(chunk_hs, lm_head_t\)  #",
            r"chunk_logits = torch.matmul(chunk_hs, lm_head_t).float()  #",
        ),
        (
            "unsloth/train.py",
            r"(\(batch_size, seq_len\),\n[ \t]*)dtype=hidden_states\.dtype,",
            r"\g<1>dtype=torch.float32,",
        ),
    ],
}
_UNDO_0521 = [
    (
        "unsloth/train.py",
        r"chunk_logits = torch\.matmul\(chunk_hs, lm_head_t\)\.float\(\)  #",
        r"chunk_logits = torch.matmul(chunk_hs, lm_head_t)  #",
    ),
    (
        "unsloth/train.py",
        r"(\(batch_size, seq_len\),\n[ \t]*)dtype=torch\.float32,",
        r"\g<1>dtype=hidden_states.dtype,",
    ),
]
UNFIX = {"0.5.21": _UNDO_0521, "0.5.23": _UNDO_0521}
