"""Item 4, a real fix written as a helper method on ``self``: a new ``TrainerRank`` method
``_fp32_head_operands`` returns the rows and the weight in FP32, and the head calls it. The
check must run it (the method is on the class, not in the function). artbot's control
(issue #37).
"""

KIND = "real"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "trainer_rank/_impl.py",
        r"^(\s*)logits, _ = output_layer\(\n\s*hidden\.unsqueeze\(1\),\n\s*weight=output_weight,\n",
        r"\g<1>rows, weight = self._fp32_head_operands(output_layer, hidden, output_weight)\n"
        r"\g<1>logits, _ = output_layer(\n"
        r"\g<1>    rows.unsqueeze(1),\n"
        r"\g<1>    weight=weight,\n",
    ),
    (
        "trainer_rank/_impl.py",
        r"^    def _local_logits_from_hidden_rows\(\n",
        "    def _fp32_head_operands(self, layer, hidden, weight):\n"
        "        weight = layer.weight if weight is None else weight\n"
        "        return hidden.to(torch.float32), weight.to(dtype=torch.float32)\n"
        "\n"
        "    def _local_logits_from_hidden_rows(\n",
    ),
]
EXPECT = {"bf16-logit-rounding-noise": "fixed"}
