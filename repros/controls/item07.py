"""Item 7, 0.5.21's fix (the audit's: "skip TIS when original_logprobs is absent"): the
``policy_loss *= torch.clamp(prob_ratio, max=upper_bound)`` of truncated importance sampling
moves inside ``if aligned_inputs.original_logprobs is not None`` (0.5.21 ``loss.py`` L387-L388),
so without original logprobs TIS is skipped instead of falling back to the PPO ratio. UNFIX
moves it back out (and drops 0.5.21's warning), so the check is shown to say "reproduced" on a
release that fixed it. (Helper "checks" wrote these two for items 7 and 8 with
tests/helpers/controls.py; the item's own check is helper "evid"'s.)
"""

FIX = {
    "0.5.20": [
        (
            "loss.py",
            r"(            prob_ratio = torch\.exp\(logprob_diff\)\n)"
            r"        policy_loss \*= torch\.clamp\(prob_ratio, max=upper_bound\)\.detach\(\)\n",
            r"\g<1>            policy_loss *= torch.clamp(prob_ratio, max=upper_bound).detach()\n",
        )
    ],
}
_UNDO_0521 = [
    (
        "loss.py",
        r"(            prob_ratio = torch\.exp\(logprob_diff\)\n)"
        r"            policy_loss \*= torch\.clamp\(prob_ratio, max=upper_bound\)\.detach\(\)\n"
        r"        else:\n(?:            .*\n)*?            \)\n",
        r"\g<1>        policy_loss *= torch.clamp(prob_ratio, max=upper_bound).detach()\n",
    )
]
UNFIX = {"0.5.21": _UNDO_0521, "0.5.23": _UNDO_0521}
