"""Item 9, a fake fix on 0.5.23 that holds on part of the domain: the optimizer steps after
every second row (and after the last), so two rows take one step, but three take two and eight
take four. It fooled the check while the check tried two rows only. artbot's control
(issue #37).
"""

KIND = "fake"
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
        '\\g<o>if i % 2 == 1 or i == packed_tensors["tokens"].shape[0] - 1:\n'
        "\\g<o>    optim_step_future = await state.training_client.optim_step_async(\n"
        "\\g<args>\\g<o>    )\n"
        "\\g<o>    forward_backward_output, optim_step_response = await asyncio.gather(\n"
        "\\g<o>        forward_backward_output_future, optim_step_future\n"
        "\\g<o>    )\n"
        "\\g<o>else:\n"
        "\\g<o>    forward_backward_output = await forward_backward_output_future\n"
        "\\g<o>    optim_step_response = forward_backward_output\n",
    ),
]
EXPECT = None
