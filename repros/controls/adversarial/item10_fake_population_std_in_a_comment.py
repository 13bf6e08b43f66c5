"""Item 10, a fake fix on 0.5.20: a comment naming ``std(unbiased=False)``. artbot's control."""

KIND = "fake"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "tinker_native/data.py",
        "^(\\s*)(std_reward = rewards_tensor\\.std\\(\\))",
        "\\g<1># std_reward = rewards_tensor.std(unbiased=False)\\n\\g<1>\\g<2>",
    ),
]
EXPECT = {"sample-std-advantages": "reproduced"}
