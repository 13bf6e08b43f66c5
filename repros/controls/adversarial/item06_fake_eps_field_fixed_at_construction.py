"""Item 6, a fake fix that holds on part of the domain: an ``eps`` field (default 1e-13)
passed to AdamW only when it equals the default, else torch's 1e-8 (``eps=params.eps if
params.eps == 1e-13 else 1e-8``): a user's other value never reaches the optimizer.
artbot's control (issue #37).
"""

KIND = "fake"
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
        r"\g<0>\g<1>eps=params.eps if params.eps == 1e-13 else 1e-8,\n",
    ),
]
EXPECT = {"eps-not-configurable": "reproduced", "eps-damps-tiny-updates": "fixed"}
