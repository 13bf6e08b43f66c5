"""Item 6, a fake fix: a comment naming ``eps=params.eps`` in the AdamW call. artbot's control."""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "trainer_rank/_optimizer.py",
        "^([ \\t]*)weight_decay=params\\.weight_decay,\\n",
        "\\g<0>\\g<1># eps=params.eps,\\n",
    ),
]
EXPECT = {"eps-not-configurable": "reproduced", "eps-damps-tiny-updates": "reproduced"}
