"""Item 9, a fake fix: a single step after the rows' loop under ``if False:``, the per-row
step left in place. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "tinker/service.py",
        "^([ \\t]*)(optim_step_future = await state\\.training_client\\.optim_step_async\\(\\n)",
        "\\g<1>if False:  # step once after the loop\\n\\g<1>    pass\\n\\g<1>\\g<2>",
    ),
]
EXPECT = {"wrong-per-datum-masks": "fixed", "one-optimizer-step-per-packed-row": "reproduced"}
