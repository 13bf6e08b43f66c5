"""Item 4, a fake fix: the logits upcast after the GEMM (``model._scale_logits(logits.float())``):
the BF16 store has rounded them already. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "trainer_rank/_impl.py",
        "model\\._scale_logits\\(logits\\),",
        "model._scale_logits(logits.float()),",
    ),
]
EXPECT = {"bf16-logit-rounding-noise": "reproduced"}
