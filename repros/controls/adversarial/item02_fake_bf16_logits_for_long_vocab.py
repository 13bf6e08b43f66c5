"""Item 2, a fake fix that holds on part of the domain: the chunk's logits upcast to FP32 only for
a vocabulary of at most 4096 ids (``chunk_logits if chunk_logits.shape[-1] > 4096 else
chunk_logits.float()``), so every real model (Qwen3: 151,936 ids) keeps the BF16 logsumexp.
artbot's control, from the red team's edit (/tmp/redteam experiments,
``i2_fake_log_softmax_bf16_for_long_vocab``), judged fixed while the check's vocabulary was 128
ids.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "unsloth/train.py",
        r"^(\s*)chunk_logits = torch\.matmul\(chunk_hs, lm_head_t\)\.float\(\)  #.*$",
        r"\g<1>chunk_logits = torch.matmul(chunk_hs, lm_head_t)\n"
        r"\g<1>chunk_logits = (\n"
        r"\g<1>    chunk_logits if chunk_logits.shape[-1] > 4096 else chunk_logits.float()\n"
        r"\g<1>)",
    ),
]
EXPECT = {"zeroed-logprob-and-gradient": "reproduced"}
