"""Item 5, a real fix written unlike the others: a tensor hook (``register_hook``, run on each
call's gradient before it is accumulated) adds the gradient into an FP32 ``main_grad`` and
hands autograd zeros, and the trainer's ``_reduce_dynamic_grads`` reads ``main_grad`` where a
parameter has one. artbot's control (issue #37).
"""

KIND = "real"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/lora.py",
        r"^(\s*)(self\.B_T = torch\.nn\.Parameter\(torch\.zeros\(b_shape, dtype=dtype, "
        r"device=device\)\)\n)",
        r"\g<1>\g<2>\g<1>for _leaf in (self.A_T, self.B_T):\n"
        r"\g<1>    _leaf.main_grad = torch.zeros(_leaf.shape, dtype=torch.float32)\n"
        r"\g<1>    _leaf.register_hook(\n"
        r"\g<1>        lambda g, p=_leaf: (p.main_grad.add_(g.float()), torch.zeros_like(g))[1]\n"
        r"\g<1>    )\n",
    ),
    (
        "trainer_rank/_impl.py",
        r"^(\s*)if param\.grad is None\n(\s*)else param\.grad\.detach\(\)",
        r'\g<1>if getattr(param, "main_grad", param.grad) is None\n'
        r'\g<2>else getattr(param, "main_grad", param.grad).detach()',
    ),
]
EXPECT = {"bf16-gradient-accumulation": "fixed"}
