"""Follow-up 1001, the finding's second suggestion: the equality guard relative to the rewards'
magnitude (``math.isclose`` with a relative tolerance of 1e-9, the absolute 1e-12 kept for
rewards near 0); the arithmetic stays FP32. The edit applies to 0.5.21 and 0.5.23; 0.5.20's
function has no guard, so it gets one (with the sample std it keeps item 10's defect, not this
follow-up's). The first suggestion, the same arithmetic in float64, holds only for small
rewards: with its absolute 1e-8 std floor, rewards near 1.1e8 equal by construction (ulps
apart) and rewards near 3.6e5 a relative 1e-11 apart still get advantages of 1
(adversarial/item1001_half_fix_float64_only.toml). (artbot's control.)
"""

_GUARD = [
    (
        "tinker_native/data.py",
        r"abs\(reward - rewards\[0\]\) <= 1e-12 for reward in rewards\[1:\]",
        "math.isclose(reward, rewards[0], rel_tol=1e-9, abs_tol=1e-12) for reward in rewards[1:]",
    )
]
FIX = {
    "0.5.20": [
        (
            "tinker_native/data.py",
            r"(\n(\s+)rewards_tensor = torch\.tensor\(rewards, dtype=torch\.float32\)\n)",
            r"\n\g<2>if all(math.isclose(r, rewards[0], rel_tol=1e-9, abs_tol=1e-12) "
            r"for r in rewards[1:]):\n\g<2>    return [0.0] * len(rewards)\g<1>",
        )
    ],
    "0.5.21": _GUARD,
    "0.5.23": _GUARD,
}
