"""Item 5, a fake fix (the issue's): a comment naming FP32 staging in ``trainer_rank/_impl.py``.
artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "trainer_rank/_impl.py",
        "^(    def _reduce_dynamic_grads\\()",
        "    # TODO: stage LoRA grads in FP32, e.g. p.register_post_accumulate_grad_hoo"
        "k(...)\\n\\g<1>",
    ),
]
EXPECT = {"bf16-gradient-accumulation": "reproduced"}
