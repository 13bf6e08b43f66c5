"""Follow-up 1001, a fix that holds on part of the domain: the record's first suggestion, the
same arithmetic in float64, with the absolute 1e-12 guard and 1e-8 std floor kept. Noise of a
few float64 ulps is far below the floor for small rewards, but near 1.1e8 an ulp is 1.5e-8
(101 of 1000 groups equal by construction, per-step rewards summed in other orders, still get
advantages of 1), and a relative 1e-11 (the record's own 2e-12 at 0.22) is above it from
rewards of about 1e3. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "tinker_native/data.py",
        r"torch\.tensor\(rewards, dtype=torch\.float32\)",
        "torch.tensor(rewards, dtype=torch.float64)",
    ),
]
EXPECT = {"near-equal-group-full-advantage": "reproduced"}
