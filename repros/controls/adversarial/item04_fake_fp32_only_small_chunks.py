"""Item 4, a fake fix that holds on part of the domain: FP32 operands only while the chunk's
logits are small (rows x vocabulary up to 2**22), to save memory; a chunk of 64 rows over a
151,936-id vocabulary (9.7M logits) never takes it. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "trainer_rank/_impl.py",
        r"^(\s*)logits, _ = output_layer\(\n\s*hidden\.unsqueeze\(1\),\n\s*weight=output_weight,\n",
        r"\g<1>weight = output_layer.weight if output_weight is None else output_weight\n"
        r"\g<1>small = hidden.shape[0] * weight.shape[0] <= 2**22\n"
        r"\g<1>logits, _ = output_layer(\n"
        r"\g<1>    hidden.unsqueeze(1).float() if small else hidden.unsqueeze(1),\n"
        r"\g<1>    weight=weight.float() if small else weight,\n",
    ),
]
EXPECT = {"bf16-logit-rounding-noise": "reproduced"}
