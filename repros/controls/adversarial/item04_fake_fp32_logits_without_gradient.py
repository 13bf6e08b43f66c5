"""Item 4, a fake fix: FP32 logits computed under ``torch.no_grad()`` (to save activation
memory), so they are right and carry no gradient: training would stop learning through the
head. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "trainer_rank/_impl.py",
        r"^(\s*)logits, _ = output_layer\(\n\s*hidden\.unsqueeze\(1\),\n\s*weight=output_weight,\n",
        r"\g<1>weight = output_layer.weight if output_weight is None else output_weight\n"
        r"\g<1>with torch.no_grad():\n"
        r"\g<1>    logits, _ = output_layer(\n"
        r"\g<1>        hidden.unsqueeze(1).float(),\n"
        r"\g<1>        weight=weight.float(),\n",
    ),
]
EXPECT = {"bf16-logit-rounding-noise": "reproduced"}
