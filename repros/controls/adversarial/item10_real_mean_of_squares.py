"""Item 10, a real fix on 0.5.20 written by hand: the population std as the square root of the
mean of the squared centred rewards (no ``std`` call at all). artbot's control (issue #37).
"""

KIND = "real"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "tinker_native/data.py",
        r"std_reward = rewards_tensor\.std\(\)",
        "std_reward = (centered * centered).mean().sqrt()",
    ),
]
EXPECT = {"sample-std-advantages": "fixed"}
