"""Item 4, a fake fix that holds on part of the domain: the operands are upcast only when the
model is BF16; an FP16 model's head still stores FP16 logits. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "trainer_rank/_impl.py",
        r"^(\s*)logits, _ = output_layer\(\n\s*hidden\.unsqueeze\(1\),\n\s*weight=output_weight,\n",
        r"\g<1>weight = output_layer.weight if output_weight is None else output_weight\n"
        r"\g<1>if hidden.dtype == torch.bfloat16:\n"
        r"\g<1>    hidden, weight = hidden.float(), weight.float()\n"
        r"\g<1>logits, _ = output_layer(\n"
        r"\g<1>    hidden.unsqueeze(1),\n"
        r"\g<1>    weight=weight,\n",
    ),
]
EXPECT = {"bf16-logit-rounding-noise": "reproduced"}
