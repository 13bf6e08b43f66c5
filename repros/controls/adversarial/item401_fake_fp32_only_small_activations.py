"""Follow-up 401, a fake fix that holds on part of the domain: the matmul in FP32 only while the
chunk's hidden states stay within 30 in magnitude (``chunk_hs.abs().max() <= 30``), so a model
whose final hidden states reach 40 or more (real ones reach hundreds) keeps BF16 logits: with
hidden states of |max| 40 and hidden size 64 its log-probabilities are those of rounded logits.
artbot's control, from the red team's edit (/tmp/redteam experiments,
``i401_fake_fp32_only_small_activations``), judged fixed while the check's hidden states never
exceeded about 4.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "unsloth/train.py",
        r"^(\s*)chunk_logits = torch\.matmul\(chunk_hs, lm_head_t\)\.float\(\)  #.*$",
        r"\g<1>chunk_logits = (\n"
        r"\g<1>    torch.matmul(chunk_hs.float(), lm_head_t.float())\n"
        r"\g<1>    if chunk_hs.abs().max() <= 30\n"
        r"\g<1>    else torch.matmul(chunk_hs, lm_head_t).float()\n"
        r"\g<1>)",
    ),
]
EXPECT = {"bf16-logits-on-unsloth": "reproduced"}
