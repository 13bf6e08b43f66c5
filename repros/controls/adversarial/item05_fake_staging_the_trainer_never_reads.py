"""Item 5, a fake fix: FP32 ``main_grad`` staging through a post-accumulate hook in
``lora.py`` that clears ``.grad``, while the trainer's ``_reduce_dynamic_grads`` still reads
``param.grad``: the step sees no gradient at all. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/lora.py",
        r"^(\s*)(self\.B_T = torch\.nn\.Parameter\(torch\.zeros\(b_shape, dtype=dtype, "
        r"device=device\)\)\n)",
        r"\g<1>\g<2>\g<1>for _p in (self.A_T, self.B_T):\n"
        r"\g<1>    _p.main_grad = torch.zeros_like(_p, dtype=torch.float32)\n"
        r"\g<1>    _p.register_post_accumulate_grad_hook(\n"
        r"\g<1>        lambda p: [p.main_grad.add_(p.grad.float()), setattr(p, 'grad', None)][-1]\n"
        r"\g<1>    )\n",
    ),
]
EXPECT = {"bf16-gradient-accumulation": "reproduced"}
