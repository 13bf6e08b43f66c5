"""Item 6, a real fix written unlike the suggested one: an ``eps`` field (default 1e-13) not passed
to the AdamW constructor but written into every param group after it (and on each later step's
update of the groups), compared by the cross-rank guard. artbot's control, from the red team's
edit (/tmp/redteam experiments, ``i6_real_param_groups``).
"""

KIND = "real"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "trainer_rank/_impl.py",
        r"(class AdamParams:\n(?:    .*\n)*?    grad_clip_norm: float = 0\.1\n)",
        r"\g<1>    eps: float = 1e-13\n",
    ),
    (
        "trainer_rank/_optimizer.py",
        r"^([ \t]*)value\.grad_clip_norm,\n",
        r"\g<0>\g<1>value.eps,\n",
    ),
    (
        "trainer_rank/_optimizer.py",
        r'^([ \t]*)group\["weight_decay"\] = params\.weight_decay\n',
        r'\g<0>\g<1>group["eps"] = params.eps\n',
    ),
    (
        "trainer_rank/_optimizer.py",
        r"^(    \)\n)(    dynamic = _impl\._DynamicOptimizer)",
        r"\g<1>    for _group in optimizer.param_groups:\n"
        r'        _group["eps"] = params.eps\n\g<2>',
    ),
]
EXPECT = {"eps-not-configurable": "fixed", "eps-damps-tiny-updates": "fixed"}
