"""Item 10, a fake fix on 0.5.20 that holds for one group size: the sample std rescaled by
sqrt(3/4), the population std for groups of four only (the audit's example size). artbot's
control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "tinker_native/data.py",
        r"std_reward = rewards_tensor\.std\(\)",
        "std_reward = rewards_tensor.std() * 0.8660254037844386",
    ),
]
EXPECT = {"sample-std-advantages": "reproduced"}
