"""Item 6, half a fix: an ``eps`` field on AdamParams (default 1e-13) that no ``AdamW`` call
passes on: the optimizer keeps torch's 1e-8. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "trainer_rank/_impl.py",
        "(class AdamParams:\\n(?:    .*\\n)*?    grad_clip_norm: float = 0\\.1\\n)",
        "\\g<1>    eps: float = 1e-13\\n",
    ),
]
EXPECT = {"eps-not-configurable": "reproduced", "eps-damps-tiny-updates": "reproduced"}
