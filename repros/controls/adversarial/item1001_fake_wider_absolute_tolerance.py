"""Follow-up 1001, a fake fix (half a fix): the absolute tolerance widened from 1e-12 to 1e-11,
just past the finding's two groups (2e-12 and 5e-12 apart). Still absolute: rewards equal by
construction near 1.5e6, 2.3e-10 apart, pass it and get advantages of 1. It fooled the check
before the check ran a group at that scale. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    ("tinker_native/data.py", r"<= 1e-12 for reward in rewards", "<= 1e-11 for reward in rewards"),
]
EXPECT = {"near-equal-group-full-advantage": "reproduced"}
