"""Item 8, 0.5.21's fix (the audit's: clamp the log-ratio before ``exp``): non-finite old
logprobs are replaced like missing ones (``~torch.isfinite`` instead of ``torch.isnan``), and
the token log-ratio, and the sequence's mean log-ratio at the other importance-sampling levels,
are clamped to +-20 before ``exp`` (0.5.21 ``loss.py`` L290-L308; 0.5.21 uses +-10 for FP16,
where exp(20) overflows: the check's domain has FP16 logprobs and every level, so this control
does the same). UNFIX undoes both, so the check is
shown to say "reproduced" on a release that fixed it. (Helper "checks" wrote these two for
items 7 and 8 with tests/helpers/controls.py; the item's own check is helper "evid"'s.)
"""

FIX = {
    "0.5.20": [
        (
            "loss.py",
            r"(\n        )torch\.isnan\(old_logprobs\),",
            r"\g<1>~torch.isfinite(old_logprobs),",
        ),
        (
            "loss.py",
            r"^    prob_ratio = torch\.exp\(logprob_diff\)\n",
            r"    bound = 10.0 if logprob_diff.dtype == torch.float16 else 20.0\n"
            r"    prob_ratio = torch.exp(logprob_diff.clamp(-bound, bound))\n",
        ),
        (
            "loss.py",
            r"(\n            \)\n)"
            r"(        \)\n        if importance_sampling_level == \"sequence\":)",
            r"\n            ).clamp(-bound, bound)\n\g<2>",
        ),
    ],
}
_UNDO_0521 = [
    (
        "loss.py",
        r"(\n        )~torch\.isfinite\(old_logprobs\),",
        r"\g<1>torch.isnan(old_logprobs),",
    ),
    (
        "loss.py",
        r"prob_ratio = torch\.exp\(logprob_diff\.clamp\(-log_ratio_bound, log_ratio_bound\)\)",
        r"prob_ratio = torch.exp(logprob_diff)",
    ),
]
UNFIX = {"0.5.21": _UNDO_0521, "0.5.23": _UNDO_0521}
