"""Follow-up 1001, a fake fix that holds on part of the domain (found by the red team of issue
#37): the rewards are rounded to 9 significant digits before the equality guard. Rewards 2e-12
apart on either side of a decimal rounding boundary (0.2200000005) round to 0.22 and
0.220000001, pass the guard as different and get full-scale advantages. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "tinker_native/data.py",
        r"\n(    )(if all\(abs\(reward - rewards\[0\]\) <= 1e-12 for reward in rewards\[1:\]\):)",
        '\n\\g<1>rewards = [float(f"{r:.9g}") for r in rewards]\n\\g<1>\\g<2>',
    ),
]
EXPECT = {"near-equal-group-full-advantage": "reproduced"}
