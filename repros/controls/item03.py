"""Item 3 (#1110): artbot's control; the audit gives no fix for this item.

0.5.21 calls a group zero-variance when every reward is within 1e-12 of the first
(``utils/grpo.py`` ``rewards_have_zero_variance``) and then gives it advantage 0, which drops it.
That test is false for a group of -inf rewards (-inf - -inf is NaN) and for rewards equal up to
float noise (0.5 and 0.5 + 2e-12). The control makes the test ``math.isclose(reward, first,
rel_tol=1e-9, abs_tol=1e-12)``: true for equal infinite rewards and for noise relative to the
rewards' size. On 0.5.20, which has no such test, the same test is written into
``tokenize_trajectory_groups``' advantage statements, and a zero advantage is not divided by the
group's standard deviation (NaN for a group of -inf rewards), as 0.5.21 sets it to 0.
"""

_ISCLOSE_0521 = [
    ("utils/grpo.py", r"^from collections\.abc import Sequence\n", r"import math\n\g<0>"),
    (
        "utils/grpo.py",
        r"abs\(reward - first\) <= 1e-12",
        r"math.isclose(reward, first, rel_tol=1e-9, abs_tol=1e-12)",
    ),
]

FIX = {
    "0.5.20": [
        (
            "preprocessing/tokenize.py",
            r"^([ \t]*)advantage = trajectory\.reward - reward_mean\n",
            r"\g<1>advantage = 0.0 if all(math.isclose(t.reward, group[0].reward, "
            r"rel_tol=1e-9, abs_tol=1e-12) for t in group) else trajectory.reward - reward_mean\n",
        ),
        (
            "preprocessing/tokenize.py",
            r"^([ \t]*)advantage /= reward_std \+ 1e-6\n",
            r"\g<1>advantage = 0.0 if advantage == 0.0 else advantage / (reward_std + 1e-6)\n",
        ),
    ],
    "0.5.21": _ISCLOSE_0521,
    "0.5.23": _ISCLOSE_0521,
}
# No release fixes every claim of item 3; where a release fixes some, FIX still applies.
UNFIX: list[tuple[str, str, str]] = []
