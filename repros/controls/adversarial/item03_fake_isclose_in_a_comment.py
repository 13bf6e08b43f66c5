"""Item 3, a fake fix: a comment and a docstring naming ``math.isclose`` in
``rewards_have_zero_variance``, the test unchanged. Every claim keeps 0.5.23's verdict.
artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "utils/grpo.py",
        "^(    return all\\(abs\\(reward - first\\) <= 1e-12)",
        '    """Zero variance up to float noise: math.isclose(reward, first, rel_tol=1e'
        '-9)."""\\n    # math.isclose(reward, first, rel_tol=1e-9, abs_tol=1e-12)\\n\\g'
        "<1>",
    ),
]
EXPECT = None
