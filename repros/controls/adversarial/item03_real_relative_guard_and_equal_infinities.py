"""Item 3, a real fix on 0.5.23 written unlike ``item03.py``'s ``math.isclose``: rewards are
equal when they are the same value (equal infinities included) or lie within 1e-9 of the
larger magnitude (at least 1e-12), by hand. artbot's control (issue #37).
"""

KIND = "real"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "utils/grpo.py",
        r"abs\(reward - first\) <= 1e-12",
        "reward == first or abs(reward - first) <= max(1e-12, 1e-9 * max(abs(reward), abs(first)))",
    )
]
EXPECT = {
    "full-scale-advantage-for-equal-reward-groups": "fixed",
    "nan-advantages": "fixed",
    "nan-advantages-from-non-finite-rewards": "fixed",
    "full-scale-advantage-for-near-equal-reward-groups": "fixed",
}
