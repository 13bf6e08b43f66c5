"""Follow-up 1001, a fake fix (text that names the fix): a comment above the guard asking for a
tolerance relative to the rewards' magnitude; the guard is the release's. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "tinker_native/data.py",
        r"^([ \t]*)(if all\(abs\(reward - rewards\[0\]\) <= 1e-12)",
        r"\g<1># equal up to float noise: use math.isclose(reward, rewards[0], rel_tol=1e-9)\n"
        r"\g<1>\g<2>",
    ),
]
EXPECT = {"near-equal-group-full-advantage": "reproduced"}
