"""Follow-up 1001, a fake fix that holds on part of the domain (found by the red team of issue
#37): the guard asks whether all rewards are equal once rounded to FP32. Rewards 2e-12 apart on
either side of an FP32 rounding boundary (the midpoint between 0.22 in FP32 and the next FP32
value) round to two FP32 values one ulp apart, and get advantages of -1.22, -1.22 and 0.0 where
float noise should get none. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "tinker_native/data.py",
        r"if all\(abs\(reward - rewards\[0\]\) <= 1e-12 for reward in rewards\[1:\]\):",
        "if len(set(torch.tensor(rewards, dtype=torch.float32).tolist())) == 1:",
    ),
]
EXPECT = {"near-equal-group-full-advantage": "reproduced"}
