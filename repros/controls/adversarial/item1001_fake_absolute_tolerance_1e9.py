"""Follow-up 1001, a fake fix that holds on part of the domain: the equality guard's absolute
tolerance widened to 1e-9, past every fixed example the record names; still absolute, so
rewards near 1.1e8 equal by construction (float64 ulps of 1.5e-8 apart) pass it, and FP32
then gives them advantages of 1. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    ("tinker_native/data.py", r"<= 1e-12 for reward in rewards", "<= 1e-9 for reward in rewards"),
]
EXPECT = {"near-equal-group-full-advantage": "reproduced"}
