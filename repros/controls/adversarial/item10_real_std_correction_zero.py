"""Item 10, a real fix on 0.5.20 written unlike the suggested ``std(unbiased=False)``:
``torch.std(x, correction=0)``, the population std by the newer keyword. artbot's control
(issue #37).
"""

KIND = "real"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "tinker_native/data.py",
        r"std_reward = rewards_tensor\.std\(\)",
        "std_reward = torch.std(rewards_tensor, correction=0)",
    ),
]
EXPECT = {"sample-std-advantages": "fixed"}
