"""Item 4, a fake fix (the issue's): the head GEMM's rows given as FP16
(``hidden.unsqueeze(1).to(torch.float16)``, the weight too): FP16 rounds far above FP32.
artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "trainer_rank/_impl.py",
        "^(\\s*logits, _ = output_layer\\(\\n\\s*)hidden\\.unsqueeze\\(1\\),\\n(\\s*)we"
        "ight=output_weight,",
        "\\g<1>hidden.unsqueeze(1).to(torch.float16),\\n\\g<2>weight=(output_layer.weig"
        "ht if output_weight is None else output_weight).to(torch.float16),",
    ),
]
EXPECT = {"bf16-logit-rounding-noise": "reproduced"}
