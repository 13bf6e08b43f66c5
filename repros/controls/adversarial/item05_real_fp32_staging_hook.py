"""Item 5, a real fix of the audit's first form ("accumulate into FP32 staging tensors"),
written differently from the control in ``item05.py``: a post-accumulate-grad hook on each
leaf adds its BF16 ``.grad`` into an FP32 ``main_grad`` and clears ``.grad``, and the trainer's
``_reduce_dynamic_grads`` reads ``main_grad`` where a parameter has one (staging the trainer did
not read would fix nothing: 0.5.23 reads ``param.grad``). artbot's control.
"""

KIND = "real"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/lora.py",
        "^(\\s*)(self\\.B_T = torch\\.nn\\.Parameter\\(torch\\.zeros\\(b_shape, dtype=d"
        "type, device=device\\)\\)\\n)",
        "\\g<1>\\g<2>\\g<1>for _p in (self.A_T, self.B_T):\\n\\g<1>    _p.main_grad = t"
        "orch.zeros_like(_p, dtype=torch.float32)\\n\\g<1>    _p.register_post_accumula"
        "te_grad_hook(lambda p: [p.main_grad.add_(p.grad.float()), setattr(p, 'grad', N"
        "one)][-1])\\n",
    ),
]
EDITS.append(
    (
        "trainer_rank/_impl.py",
        r"^(\s*)if param\.grad is None\n(\s*)else param\.grad\.detach\(\)",
        r'\g<1>if param.grad is None and getattr(param, "main_grad", None) is None\n'
        r'\g<2>else (param.grad if getattr(param, "main_grad", None) is None '
        r"else param.main_grad).detach()",
    )
)
EXPECT = {"bf16-gradient-accumulation": "fixed"}
