"""Item 10, the audit's fix: "Pick one convention". Population standard deviation, the
other backends' (and 0.5.21's): ``rewards_tensor.std(unbiased=False)`` in tinker_native's
``compute_advantages``. UNFIX undoes 0.5.21's change (``std(unbiased=False)`` back to torch's
sample ``std()``), so the check is shown to say "reproduced" on a release that fixed it.
"""

FIX = {
    "0.5.20": [
        (
            "tinker_native/data.py",
            r"std_reward = rewards_tensor\.std\(\)",
            r"std_reward = rewards_tensor.std(unbiased=False)",
        )
    ],
}
_UNDO_0521 = [
    (
        "tinker_native/data.py",
        r"std_reward = rewards_tensor\.std\(unbiased=False\)",
        r"std_reward = rewards_tensor.std()",
    )
]
UNFIX = {"0.5.21": _UNDO_0521, "0.5.23": _UNDO_0521}
