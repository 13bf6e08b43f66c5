"""Follow-up 1001, a real fix written differently from ``item1001.py`` (the finding's second
suggestion): the equality guard relative to the rewards' magnitude (1e-9 of it, at least
1e-9); the arithmetic stays FP32. artbot's control.
"""

KIND = "real"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "tinker_native/data.py",
        r"abs\(reward - rewards\[0\]\) <= 1e-12",
        "abs(reward - rewards[0]) <= 1e-9 * max(1.0, abs(rewards[0]))",
    ),
]
EXPECT = {"near-equal-group-full-advantage": "fixed"}
