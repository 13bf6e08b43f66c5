"""Item 6, a fake fix (the issue's): ``eps=1e-13`` written into the ``AdamW(...)`` call. The
default is no longer damped, but eps still cannot be set: partial. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "trainer_rank/_optimizer.py",
        "^([ \\t]*)weight_decay=params\\.weight_decay,\\n",
        "\\g<0>\\g<1>eps=1e-13,\\n",
    ),
]
EXPECT = {"eps-not-configurable": "reproduced", "eps-damps-tiny-updates": "fixed"}
