"""Item 4, the audit's fix: "A GPU A/B with an FP32-output GEMM for the head chunk".

The output layer's GEMM in ``_local_logits_from_hidden_rows`` is given FP32 operands (the
hidden rows and, when one is passed, the output weight, both ``.float()``), so the logits come
out of it in FP32. An upcast of the logits after the call would not be this fix: the BF16 store
has rounded them by then (tests/test_repros_bf16_read.py checks that it still reads reproduced).
"""

FIX = [
    (
        "trainer_rank/_impl.py",
        r"^(\s*logits, _ = output_layer\(\n\s*)hidden\.unsqueeze\(1\),\n(\s*)weight=output_weight,",
        r"\g<1>hidden.float().unsqueeze(1),\n"
        r"\g<2>weight=None if output_weight is None else output_weight.float(),",
    ),
]
UNFIX: list[tuple[str, str, str]] = []  # no release fixes item 4
