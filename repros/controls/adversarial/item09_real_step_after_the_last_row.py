"""Item 9, a real fix on 0.5.23 written unlike ``item09.py`` (which moves the step out of the
loop): the loop is kept and the optimizer steps only on its last row, after every row's
forward_backward has been accumulated. artbot's control (issue #37).
"""

KIND = "real"
RELEASES = ("0.5.23",)
_OPTIM = (
    r"(?P<o>[ \t]+)optim_step_future = await state\.training_client\.optim_step_async\(\n"
    r"(?P<args>(?:.*\n)*?)(?P=o)\)\n"
    r"(?P=o)forward_backward_output, optim_step_response = await asyncio\.gather\(\n"
    r"(?:.*\n)*?(?P=o)\)\n"
)
EDITS = [
    (
        "tinker/service.py",
        _OPTIM,
        "\\g<o>forward_backward_output = await forward_backward_output_future\n"
        "\\g<o>optim_step_response = forward_backward_output\n"
        '\\g<o>if i == packed_tensors["tokens"].shape[0] - 1:\n'
        "\\g<o>    optim_step_future = await state.training_client.optim_step_async(\n"
        "\\g<args>\\g<o>    )\n"
        "\\g<o>    optim_step_response = await optim_step_future\n",
    ),
]
EXPECT = {"one-optimizer-step-per-packed-row": "fixed", "wrong-per-datum-masks": "fixed"}
