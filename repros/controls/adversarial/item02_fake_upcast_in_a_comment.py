"""Item 2, a fake fix on 0.5.20: a comment naming the upcast (``# .float() the logits``) above
the BF16 matmul. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "unsloth/train.py",
        "^(\\s*)(chunk_logits = torch\\.matmul\\(chunk_hs, lm_head_t\\)  #)",
        "\\g<1># TODO: chunk_logits = torch.matmul(chunk_hs, lm_head_t).float()\\n\\g<1>\\g<2>",
    ),
]
EXPECT = {"zeroed-logprob-and-gradient": "reproduced"}
