"""Item 4, the audit's fix: "A GPU A/B with an FP32-output GEMM for the head chunk".

The output layer's GEMM in ``_local_logits_from_hidden_rows`` is given FP32 operands: the
hidden rows ``.float()``, and the weight it multiplies (the one passed, else the layer's own)
``.float()``, so the logits come out of it in FP32. Upcasting the rows alone is half of it
(the layer's own weight stays BF16: the GEMM refuses the pair), and an upcast of the logits
after the call is no fix (the BF16 store has rounded them): see ``adversarial/``.
"""

FIX = [
    (
        "trainer_rank/_impl.py",
        r"^(\s*logits, _ = output_layer\(\n\s*)hidden\.unsqueeze\(1\),\n(\s*)weight=output_weight,",
        r"\g<1>hidden.float().unsqueeze(1),\n"
        r"\g<2>weight=(output_layer.weight if output_weight is None else output_weight).float(),",
    ),
]
UNFIX: list[tuple[str, str, str]] = []  # no release fixes item 4
