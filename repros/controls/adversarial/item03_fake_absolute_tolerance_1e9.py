"""Item 3, a fake fix on 0.5.23 that holds on part of the domain: the zero-variance test's
absolute tolerance widened to 1e-9, past the record's 1.8e-12 near 9437.6; still absolute, so
rewards near 1.1e8 equal by construction (float64 ulps of 1.5e-8 apart) are not called equal
and train at full scale. Nothing for -inf. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [("utils/grpo.py", r"abs\(reward - first\) <= 1e-12", "abs(reward - first) <= 1e-9")]
EXPECT = {
    "full-scale-advantage-for-equal-reward-groups": "fixed",
    "nan-advantages": "fixed",
    "nan-advantages-from-non-finite-rewards": "reproduced",
    "full-scale-advantage-for-near-equal-reward-groups": "reproduced",
}
