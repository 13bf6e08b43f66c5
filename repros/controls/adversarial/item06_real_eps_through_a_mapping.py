"""Item 6, a real fix written differently from ``item06.py``: an ``eps`` field on AdamParams
(default 1e-13), handed to ``AdamW`` through a mapping (``**{"eps": params.eps}``) rather than a
keyword, and compared by the cross-rank guard. Both claims must read fixed. artbot's control.
"""

KIND = "real"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "trainer_rank/_impl.py",
        r"(class AdamParams:\n(?:    .*\n)*?    grad_clip_norm: float = 0\.1\n)",
        r"\g<1>    eps: float = 1e-13\n",
    ),
    (
        "trainer_rank/_optimizer.py",
        r"^([ \t]*)weight_decay=params\.weight_decay,\n",
        r'\g<0>\g<1>**{"eps": params.eps},\n',
    ),
    ("trainer_rank/_optimizer.py", r"^([ \t]*)value\.grad_clip_norm,\n", r"\g<0>\g<1>value.eps,\n"),
]
EXPECT = {"eps-not-configurable": "fixed", "eps-damps-tiny-updates": "fixed"}
