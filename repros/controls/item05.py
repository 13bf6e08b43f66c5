"""Item 5, the audit's fix: "Accumulate into FP32 staging tensors, or keep FP32 LoRA leaves".

The second form: ``LoRA.__init__`` creates ``A_T`` and ``B_T`` in ``torch.float32`` instead of
the dtype passed in (the base weight's), and the dense forward casts them to the input's dtype
(``(x @ a_t.to(x.dtype)) @ b_t.to(x.dtype)``: the GEMMs stay BF16, as a BF16 input cannot be
multiplied by an FP32 matrix), so each backward call's gradient is summed into an FP32 ``.grad``.
"""

FIX = [
    (
        "megatron/lora.py",
        r"^(\s*self\.[AB]_T = torch\.nn\.Parameter\(torch\.zeros\([ab]_shape, )dtype=dtype,",
        r"\g<1>dtype=torch.float32,",
    ),
    (
        "megatron/lora.py",
        r"^(\s*)out = \(x @ a_t\) @ b_t$",
        r"\g<1>out = (x @ a_t.to(x.dtype)) @ b_t.to(x.dtype)",
    ),
]
UNFIX: list[tuple[str, str, str]] = []  # no release fixes item 5
