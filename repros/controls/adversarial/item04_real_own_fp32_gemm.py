"""Item 4, a real fix written differently from ``item04.py``: the function no longer calls the
output layer; it multiplies the FP32 rows by the FP32 weight itself (``torch.matmul``), so the
logits come out in FP32. The check must see it by what comes back. artbot's control.
"""

KIND = "real"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "trainer_rank/_impl.py",
        r"^(\s*)logits, _ = output_layer\(\n\s*hidden\.unsqueeze\(1\),\n\s*weight=output_weight,\n"
        r"\s*runtime_gather_output=None,\n\s*\)\n",
        r"\g<1>weight = output_layer.weight if output_weight is None else output_weight\n"
        r"\g<1>logits = torch.matmul(hidden.float().unsqueeze(1), weight.float().T)\n",
    ),
]
EXPECT = {"bf16-logit-rounding-noise": "fixed"}
