"""Item 9, the audit's fix: "Build masks as (group == g) | (group == parent(g)) ...
Accumulate forward_backward over rows and step once."

The masks (0.5.20 only; 0.5.21 builds them from every ancestor): ``parent_ids == parent_id``
becomes ``group_ids == parent_id`` in ``TinkerService.train``. The step: the per-row
``optim_step_async`` and its ``asyncio.gather`` leave the loop; each row awaits its
forward_backward and yields its metrics, and one ``optim_step_async`` follows the loop.
"""

_STEP_ONCE = (
    "tinker/service.py",
    r"^(?P<o>[ \t]*)    optim_step_future = await state\.training_client\.optim_step_async\(\n"
    r"(?P<args>(?:.*\n)*?)(?P=o)    \)\n"
    r"(?P=o)    forward_backward_output, optim_step_response = await asyncio\.gather\(\n"
    r"(?:.*\n)*?(?P=o)    \)\n"
    r"(?P=o)    yield \{\n(?:.*\n)*?(?P=o)    \}\n",
    r"\g<o>    forward_backward_output = await forward_backward_output_future\n"
    r"\g<o>    yield dict(forward_backward_output.metrics)\n"
    r"\g<o>optim_step_future = await state.training_client.optim_step_async(\n"
    r"\g<args>\g<o>)\n"
    r"\g<o>await optim_step_future\n",
)
_AUDIT_MASKS = (
    "tinker/service.py",
    r'\| \(packed_tensors\["parent_ids"\]\[i\] == parent_id\)',
    r'| (packed_tensors["group_ids"][i] == parent_id)',
)

FIX = {"0.5.20": [_AUDIT_MASKS, _STEP_ONCE], "0.5.21": [_STEP_ONCE], "0.5.23": [_STEP_ONCE]}
UNFIX: list[tuple[str, str, str]] = []  # no release fixes both claims
