"""Item 6, the audit's fix: "Add eps to AdamParams and the cross-rank config guard".

An ``eps`` field on ``AdamParams`` (default 1e-13, the Megatron backend's ``adam_eps``), passed
as ``eps=params.eps`` where TrainerRank builds its AdamW from AdamParams, and compared by the
cross-rank guard's ``adam_values``. The same three edits apply to 0.5.20 (everything in
``_impl.py``) and 0.5.21+ (the optimizer moved to ``_optimizer.py``).
"""

FIX = [
    (
        "trainer_rank/_impl.py",
        r"(class AdamParams:\n(?:    .*\n)*?    grad_clip_norm: float = 0\.1\n)",
        r"\g<1>    eps: float = 1e-13\n",
    ),
    (
        "trainer_rank/*.py",
        r"^([ \t]*)weight_decay=params\.weight_decay,\n",
        r"\g<0>\g<1>eps=params.eps,\n",
    ),
    ("trainer_rank/*.py", r"^([ \t]*)value\.grad_clip_norm,\n", r"\g<0>\g<1>value.eps,\n"),
]
UNFIX: list[tuple[str, str, str]] = []  # no release fixes item 6
