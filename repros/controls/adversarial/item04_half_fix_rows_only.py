"""Item 4, half a fix: the rows upcast (``hidden.float()``), the weight left BF16: the GEMM
cannot take the pair. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "trainer_rank/_impl.py",
        "^(\\s*logits, _ = output_layer\\(\\n\\s*)hidden\\.unsqueeze\\(1\\),",
        "\\g<1>hidden.float().unsqueeze(1),",
    ),
]
EXPECT = {"bf16-logit-rounding-noise": "reproduced"}
