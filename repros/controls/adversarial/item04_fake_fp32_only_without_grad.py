"""Item 4, a fake fix that holds on part of the domain: the head GEMM gets FP32 operands only
when the hidden rows do not require grad (evaluation), so training, where they do, still gets
BF16 logits. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "trainer_rank/_impl.py",
        r"^(\s*)logits, _ = output_layer\(\n\s*hidden\.unsqueeze\(1\),\n\s*weight=output_weight,\n",
        r"\g<1>wide = not hidden.requires_grad\n"
        r"\g<1>weight = output_layer.weight if output_weight is None else output_weight\n"
        r"\g<1>logits, _ = output_layer(\n"
        r"\g<1>    hidden.unsqueeze(1).float() if wide else hidden.unsqueeze(1),\n"
        r"\g<1>    weight=weight.float() if wide else weight,\n",
    ),
]
EXPECT = {"bf16-logit-rounding-noise": "reproduced"}
