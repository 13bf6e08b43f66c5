"""Item 9, a fake fix: a comment naming the one step after the loop. artbot's control."""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "tinker/service.py",
        "^([ \\t]*)(optim_step_future = await state\\.training_client\\.optim_step_async\\(\\n)",
        "\\g<1># TODO: one optim_step_async after the loop, not per row\\n\\g<1>\\g<2>",
    ),
]
EXPECT = {"wrong-per-datum-masks": "fixed", "one-optimizer-step-per-packed-row": "reproduced"}
