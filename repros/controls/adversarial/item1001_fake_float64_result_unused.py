"""Follow-up 1001, a fake fix (a patch that does not do its work): ``rewards_tensor.double()``
as a statement of its own, its result dropped; the arithmetic stays FP32. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "tinker_native/data.py",
        r"^([ \t]*)(rewards_tensor = torch\.tensor\(rewards, dtype=torch\.float32\)\n)",
        r"\g<1>\g<2>\g<1>rewards_tensor.double()\n",
    ),
]
EXPECT = {"near-equal-group-full-advantage": "reproduced"}
