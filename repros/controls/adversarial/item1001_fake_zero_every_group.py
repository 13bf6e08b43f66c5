"""Follow-up 1001, a fake fix (a patch that does not do its work): the guard made to hold for
every group, so every group gets zeros: noise no longer gets an advantage, and neither do
rewards that really differ. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "tinker_native/data.py",
        r"if all\(abs\(reward - rewards\[0\]\) <= 1e-12 for reward in rewards\[1:\]\):",
        "if all(abs(reward - rewards[0]) >= 0.0 for reward in rewards[1:]):",
    ),
]
EXPECT = {"near-equal-group-full-advantage": "reproduced"}
