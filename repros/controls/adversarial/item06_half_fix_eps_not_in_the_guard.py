"""Item 6, half a fix: an ``eps`` field (default 1e-13) passed to AdamW as ``eps=params.eps``, but
the cross-rank guard's ``adam_values`` left without it, so two ranks configured with different
eps pass the guard. The audit's fix is "add eps to AdamParams and the cross-rank config guard"
(and the finding's Expected asks for an eps "covered by the cross-rank config guard"):
configurability is reproduced, the damping fixed. artbot's control, from the red team's edit
(/tmp/redteam experiments, ``i6_fake_eps_not_in_guard``), judged fixed while the guard was only
reported.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "trainer_rank/_impl.py",
        r"(class AdamParams:\n(?:    .*\n)*?    grad_clip_norm: float = 0\.1\n)",
        r"\g<1>    eps: float = 1e-13\n",
    ),
    (
        "trainer_rank/_optimizer.py",
        r"^([ \t]*)weight_decay=params\.weight_decay,\n",
        r"\g<0>\g<1>eps=params.eps,\n",
    ),
]
EXPECT = {"eps-not-configurable": "reproduced", "eps-damps-tiny-updates": "fixed"}
