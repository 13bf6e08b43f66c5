"""Follow-up 1001, artbot's suggested fix: ``compute_advantages``'s arithmetic in float64 (as
the other backends' Python-float path), so rewards equal up to float noise have a std far
below the 1e-8 floor and get zeros. The edit applies to every release (0.5.20's function has no
guard and the sample std, but the same FP32 tensor). (artbot's control.)
"""

FIX = [
    (
        "tinker_native/data.py",
        r"torch\.tensor\(rewards, dtype=torch\.float32\)",
        "torch.tensor(rewards, dtype=torch.float64)",
    )
]
