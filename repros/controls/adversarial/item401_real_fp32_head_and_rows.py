"""Follow-up 401, a real fix written differently from ``item401.py``: the LM head made FP32
where the release casts it to the hidden states' dtype, and each chunk of rows upcast where it
is sliced; the matmul line itself is left as released (its ``.float()`` now a no-op).
artbot's control.
"""

KIND = "real"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "unsloth/train.py",
        r"lm_head_t = lm_head_t\.to\(hidden_states\.dtype\)",
        "lm_head_t = lm_head_t.float()",
    ),
    (
        "unsloth/train.py",
        r"(chunk_hs = hidden_states\[:, i : i \+ chunk_size, :\])",
        r"\g<1>.float()",
    ),
]
EXPECT = {"bf16-logits-on-unsloth": "fixed"}
