"""Item 2, a fake fix: the chunk's logits upcast to FP16 instead of FP32 (0.5.21's ``.float()``
made ``.half()``): a precision no better for log-probabilities near 0. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "unsloth/train.py",
        "chunk_logits = torch\\.matmul\\(chunk_hs, lm_head_t\\)\\.float\\(\\)  #",
        "chunk_logits = torch.matmul(chunk_hs, lm_head_t).half()  #",
    ),
    (
        "unsloth/train.py",
        "(\\(batch_size, seq_len\\),\\n[ \\t]*)dtype=torch\\.float32,",
        "\\g<1>dtype=torch.float16,",
    ),
]
EXPECT = {"zeroed-logprob-and-gradient": "reproduced"}
