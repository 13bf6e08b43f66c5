"""Item 3, a fake fix: the absolute tolerance made tighter (``1e-12`` -> ``1e-15``): no better
for rewards at scale, nothing for -inf. Every claim keeps 0.5.23's verdict. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "utils/grpo.py",
        "abs\\(reward - first\\) <= 1e-12",
        "abs(reward - first) <= 1e-15",
    ),
]
EXPECT = None
