"""Item 10, a fake fix on 0.5.20 that holds on part of the domain: the population std only for
groups of two (the sample std elsewhere), so [0, 1] is right and every larger group is not.
artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "tinker_native/data.py",
        r"std_reward = rewards_tensor\.std\(\)",
        "std_reward = rewards_tensor.std(unbiased=len(rewards) != 2)",
    ),
]
EXPECT = {"sample-std-advantages": "reproduced"}
