"""Item 6, a real fix written unlike the suggested one: the field is named ``adam_eps`` (the
Megatron backend's name, default 1e-13) and reaches ``AdamW`` as ``eps=params.adam_eps``; the
cross-rank guard compares it. artbot's control (issue #37).
"""

KIND = "real"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "trainer_rank/_impl.py",
        r"(class AdamParams:\n(?:    .*\n)*?    grad_clip_norm: float = 0\.1\n)",
        r"\g<1>    adam_eps: float = 1e-13\n",
    ),
    (
        "trainer_rank/_optimizer.py",
        r"^([ \t]*)weight_decay=params\.weight_decay,\n",
        r"\g<0>\g<1>eps=params.adam_eps,\n",
    ),
    (
        "trainer_rank/_optimizer.py",
        r"^([ \t]*)value\.grad_clip_norm,\n",
        r"\g<0>\g<1>value.adam_eps,\n",
    ),
]
EXPECT = {"eps-not-configurable": "fixed", "eps-damps-tiny-updates": "fixed"}
