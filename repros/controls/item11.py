"""Item 11, the audit's suggested test made a fix: "compare ... with the delta added in FP32".

The audit proposes leaving the BF16 add; to prove the check both ways, every wrapper's
``return <base> + <delta>, <bias>`` in ``megatron/lora.py`` adds both in FP32 and keeps the sum
in FP32. Casting the FP32 sum back to BF16 would not be this (it rounds as the BF16 add does), nor
would fixing one wrapper of seven: ``adversarial/`` holds both, and the check must call them
reproduced.
"""

FIX = [
    (
        "megatron/lora.py",
        r"^(\s*)return (\w+) \+ (\w+), (\w+)$",
        r"\g<1>return \g<2>.float() + \g<3>.float(), \g<4>",
    ),
]
UNFIX: list[tuple[str, str, str]] = []  # no release fixes item 11
