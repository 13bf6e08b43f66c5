"""Item 10, a fake fix on 0.5.20: the keyword written out, with the sample convention
(``std(unbiased=True)``). artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "tinker_native/data.py",
        "std_reward = rewards_tensor\\.std\\(\\)",
        "std_reward = rewards_tensor.std(unbiased=True)",
    ),
]
EXPECT = {"sample-std-advantages": "reproduced"}
