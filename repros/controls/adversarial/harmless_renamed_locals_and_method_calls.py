"""Items 1, 2, 4, 5, 6, 11 and 401, harmless rewrites that keep what ART's code does: locals
renamed (the head's ``output_layer`` -> ``head_layer``, the LoRA wrappers' ``lora_output`` ->
``adapter_delta``, Unsloth's ``chunk_logits`` -> ``logits_of_chunk``), a call written in method
form (``torch.matmul(chunk_hs, lm_head_t)`` -> ``chunk_hs.matmul(lm_head_t)``) and the TE
patch imported under an alias and called by it. No verdict may change. artbot's control
(issue #37).
"""

KIND = "harmless"
RELEASES = ("0.5.21", "0.5.23")
ITEMS = (1, 2, 4, 5, 6, 11, 401)
EDITS = [
    ("trainer_rank/_impl.py", r"(?<![.\w])output_layer\b", "head_layer"),
    ("megatron/lora.py", r"(?<![.\w])lora_output\b", "adapter_delta"),
    ("unsloth/train.py", r"(?<![.\w])chunk_logits\b", "logits_of_chunk"),
    ("unsloth/train.py", r"torch\.matmul\(chunk_hs, lm_head_t\)", "chunk_hs.matmul(lm_head_t)"),
    (
        "megatron/provider.py",
        r"^from art\.megatron\.te_cross_entropy import patch_te_cross_entropy\n",
        "from art.megatron.te_cross_entropy import patch_te_cross_entropy as fp32_target_grad\n",
    ),
    ("megatron/provider.py", r"^patch_te_cross_entropy\(\)\n", "fp32_target_grad()\n"),
]
EXPECT = None
