"""Item 4, a real fix written unlike the suggested one: the head no longer calls the output
layer; ``torch.nn.functional.linear`` on the rows and the weight as float64, the logits
stored in FP32 (``.to(torch.float32)``). artbot's control (issue #37).
"""

KIND = "real"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "trainer_rank/_impl.py",
        r"^(\s*)logits, _ = output_layer\(\n\s*hidden\.unsqueeze\(1\),\n\s*weight=output_weight,\n"
        r"\s*runtime_gather_output=None,\n\s*\)\n",
        r"\g<1>w = output_weight if output_weight is not None else output_layer.weight\n"
        r"\g<1>logits = torch.nn.functional.linear(hidden.double(), w.double())\n"
        r"\g<1>logits = logits.unsqueeze(1).to(torch.float32)\n",
    ),
]
EXPECT = {"bf16-logit-rounding-noise": "fixed"}
