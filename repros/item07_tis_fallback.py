"""Item 7: truncated importance sampling falls back to the policy ratio.

Models ``loss_fn`` of ART's ``art/loss.py`` as released in openpipe-art 0.5.20 (lines 263-404;
the audit's commit e2a406a48 is in no release, and its loss.py anchors sit at their lines in
0.5.20), the token-level path through lines 271-299 (masking, NaN fallback,
``prob_ratio = exp(new - old)``), 363-374 (PPO and CISPO policy loss) and 375-385 (truncated
importance sampling). When ``truncated_importance_sampling`` is set and ``original_logprobs``
is ``None``, line 385 still multiplies the loss by ``clamp(prob_ratio, max=U)``, where
``prob_ratio`` is pi_new/pi_old.

What is measured: for one trainable token with policy ratio r = exp(new - old), the factor the
TIS branch multiplies into the per-token loss (loss with TIS / loss without it), for PPO and
CISPO and both signs of the advantage. The arithmetic of line 385 says min(r, U); the intended
factor is 1 (the sampler logprobs are missing, so there is no trainer/sampler correction to make).
Also measured: the per-token gradient coefficient d loss / d new_logprob, to show the ratio
applied a second time (CISPO: clip(r) * min(r, U) instead of clip(r)).

Assumptions:
- Token-level importance sampling (ART's default ``importance_sampling_level``); the model raises
  on config keys it does not model (sequence level, ratio clamp/mask, Kimi tau, KL penalty).
- FP32 logprobs, as on the Megatron and TrainerRank consumer paths.
- U = 2.0 (ART has no default; any U > 1 shows the same min(r, U) shape).
- ART's clip defaults, as 0.5.20's loss.py L315-L320 sets them: PPO epsilon = epsilon_high = 0.2
  (ratio clipped to [0.8, 1.2]); CISPO epsilon = 1.0, epsilon_high = 4.0 (clipped to [0, 5]).
  ``check_art`` reads them from each release's source and says where.
- Inputs are already aligned (``AlignedInputs`` stands in for ART's ``AlignedLossInputs``,
  whose ``align_inputs`` returns itself), so no label shift is applied.
- The fix is modelled as ART 0.5.21 made it: skip TIS when ``original_logprobs`` is absent
  (loss.py L388-L395, with a warning).

The model of ``loss_fn`` is in ``_art_loss.py`` (shared with item 8), whose docstring lists the
lines it covers; this script sets its ``skip_tis_without_original_logprobs`` knob for the fix.

``measure(impl=...)`` takes ART's own ``loss_fn`` or the model, and gives both the same inputs
(``_art_loss.LossFn``).

``check_art`` runs ART itself: its loss path from the packer to ``loss_fn`` under both callers'
reductions, over every configuration value ``loss_fn`` reads (``_loss_path``), with the claim's
contract (``_ppo_property.CONTRACTS``); the model above is for the records' measurement.
The claim is split (issue #53): ``ORACLES`` draws its inputs without ART, the check's process
measures ART's steps on them, and artbot judges what was measured in its own process.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _art_loss  # noqa: E402
import _common  # noqa: E402
import _evidence  # noqa: E402
import _ppo_property as prop  # noqa: E402
from _art_loss import AlignedInputs, LossFn, make_loss_fn  # noqa: E402

CLAIM = "policy-ratio-applied-twice"
# The claim as artbot judges it, outside the check's process (issue #53): the judge of
# _ppo_property, the covering array and random draws of the claim's domain (ART-free).
ORACLES = {CLAIM: prop.oracle("7")}

TIS_UPPER_BOUND = 2.0
RATIOS = (0.25, 0.5, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 8.0)
NEW_LOGPROB = -1.5  # any finite negative value: CISPO's loss is proportional to it

loss_fn = make_loss_fn()
loss_fn_fixed = make_loss_fn(skip_tis_without_original_logprobs=True)


def one_token_inputs(ratio: float, advantage: float) -> tuple[AlignedInputs, torch.Tensor]:
    """One trainable token whose policy ratio pi_new/pi_old is ``ratio``; no original_logprobs."""
    new = torch.tensor([[NEW_LOGPROB]], dtype=torch.float32, requires_grad=True)
    old = torch.tensor([[NEW_LOGPROB]], dtype=torch.float64) - torch.log(
        torch.tensor(ratio, dtype=torch.float64)
    )
    inputs = AlignedInputs(
        assistant_mask=torch.ones(1, 1, dtype=torch.bool),
        old_logprobs=old.to(torch.float32),
        advantages=torch.tensor([[advantage]], dtype=torch.float32),
        weights=torch.ones(1, 1, dtype=torch.float32),
        group_ids=torch.ones(1, 1, dtype=torch.int64),
    )
    return inputs, new


def measure(
    impl: LossFn | None = None,
    *,
    ratios: tuple[float, ...] = RATIOS,
    upper_bound: float = TIS_UPPER_BOUND,
) -> dict[str, Any]:
    """Per algorithm and advantage sign: the TIS factor and gradient coefficients at each ratio.

    ``impl``: a ``_art_loss.LossFn``, ART's ``loss_fn`` or the model (the default).
    """
    impl = impl or loss_fn
    out: dict[str, Any] = {"ratios": list(ratios), "upper_bound": upper_bound, "cases": {}}
    for algo, ppo in (("ppo", True), ("cispo", False)):
        for advantage in (1.0, -1.0):
            realized, tis_factor, grad_plain, grad_tis = [], [], [], []
            for ratio in ratios:
                losses, grads = [], []
                with_tis = {"ppo": ppo, "truncated_importance_sampling": upper_bound}
                for config in ({"ppo": ppo}, with_tis):
                    inputs, new = one_token_inputs(ratio, advantage)
                    loss = impl(inputs, new, None, None, config).policy_loss
                    loss.backward()
                    losses.append(float(loss.detach()))
                    grads.append(float(new.grad[0, 0]))
                # The ratio the FP32 tensors actually encode, for checks against min(r, U).
                realized.append(
                    math.exp(float(new.detach()[0, 0]) - float(inputs.old_logprobs[0, 0]))
                )
                tis_factor.append(losses[1] / losses[0])
                # d loss / d new_logprob divided by -A: the weight each token's log-prob gets.
                # (+ 0.0 turns the -0.0 of clipped tokens into 0.0 for printing)
                grad_plain.append(grads[0] / -advantage + 0.0)
                grad_tis.append(grads[1] / -advantage + 0.0)
            out["cases"][f"{algo} A={advantage:+g}"] = {
                "ratio": realized,
                "tis_factor": tis_factor,
                "grad_coef_without_tis": grad_plain,
                "grad_coef_with_tis": grad_tis,
            }
    factors = [f for case in out["cases"].values() for f in case["tis_factor"]]
    out["max_abs_factor_minus_1"] = max(abs(f - 1.0) for f in factors)
    return out


def is_reproduced(measured: dict[str, Any]) -> bool:
    """The finding holds when TIS changes the loss although no sampler logprobs were given."""
    return measured["max_abs_factor_minus_1"] > 1e-3


def build_report() -> _common.Report:
    """Item 7: the TIS weight applied when original_logprobs is missing."""
    _common.seed_everything(0)
    as_cited = measure(loss_fn)
    fixed = measure(loss_fn_fixed)
    report = _common.Report(
        item="7",
        title="Truncated importance sampling falls back to the policy ratio",
        models="art/loss.py loss_fn as released in 0.5.20 (lines 263-404; audit: "
        "loss.py#L375-L385 at e2a406a48)",
        setting={
            "policy ratios r = pi_new/pi_old": list(as_cited["ratios"]),
            "truncated_importance_sampling U": as_cited["upper_bound"],
            "original_logprobs": "absent",
            "importance_sampling_level": "token",
            "PPO epsilon": _eps("ppo"),
            "CISPO epsilon": _eps("cispo"),
            "fix": "ART 0.5.21's: no TIS factor without original_logprobs",
        },
    )
    for name, case in as_cited["cases"].items():
        report.measure(
            f"{name}: TIS factor on the loss",
            case["tis_factor"],
            fixed=fixed["cases"][name]["tis_factor"],
            note="line 385 arithmetic: min(r, U); intended: 1",
        )
    for name in ("ppo A=+1", "ppo A=-1", "cispo A=+1"):
        report.measure(
            f"{name}: d loss / d logprob coefficient without TIS",
            as_cited["cases"][name]["grad_coef_without_tis"],
        )
        report.measure(
            f"{name}: d loss / d logprob coefficient with TIS",
            as_cited["cases"][name]["grad_coef_with_tis"],
            fixed=fixed["cases"][name]["grad_coef_with_tis"],
        )
    report.measure(
        "max |TIS factor - 1| over ratios and cases",
        as_cited["max_abs_factor_minus_1"],
        fixed=fixed["max_abs_factor_minus_1"],
        audit="the loss is multiplied by clamp(prob_ratio, max=U)",
    )
    report.note(
        "With original_logprobs absent, TIS re-applies pi_new/pi_old: CISPO's token weight becomes "
        "clip(r) * min(r, U), and PPO's unclipped-region gradient r * A becomes r * min(r, U) * A."
    )
    report.reproduced = is_reproduced(as_cited)
    report.claim("policy-ratio-applied-twice", report.reproduced)
    return report


# The lines that fix the claim, as ART 0.5.21 wrote them: the TIS factor moved under
# ``if original_logprobs is not None``, and an ``else`` that warns and skips TIS.
FIX_FIRST = "policy_loss *= torch.clamp(prob_ratio, max=upper_bound).detach()"
FIX_LOOK_FOR = '"Skipping truncated importance sampling because original_logprobs "'


def _eps(algo: str) -> str:
    low, high = _art_loss.EPSILON_DEFAULTS[algo]
    high = low if high is None else high
    return f"{low:g} / {high:g} (ratio clipped to [{1 - low:g}, {1 + high:g}])"


def check_art(art: Any) -> dict[str, Any]:
    """Item 7's property over ART's loss path and configuration (``_ppo_property``), and the
    records' one-token measurement for the detail."""
    loss = art.load("loss.py")
    found = prop.search(art, "7", CLAIM, ORACLES[CLAIM])
    hit = not found.holds
    source = art.source("loss.py")
    defaults, first, last = _art_loss.epsilon_defaults_in(source)
    same = "the model's" if defaults == _art_loss.EPSILON_DEFAULTS else "NOT the model's"
    cispo = defaults["cispo"]
    try:
        measured = measure(loss.loss_fn)
        factor = (
            f"max |TIS factor - 1| = {measured['max_abs_factor_minus_1']:.3g} on one token "
            f"(U = {measured['upper_bound']:g}; 0 when TIS is skipped)"
        )
    except Exception as exc:  # a fix may raise a clear error: the property judged it
        factor = f"the one-token step raises {type(exc).__name__}: {exc}"[:300]
    detail = (
        f"{found.summary()}; {prop.keys_note(found)}; {factor}; "
        f"clip defaults read at {art.name}/loss.py:{first}-{last}: "
        f"CISPO epsilon {cispo[0]:g}, epsilon_high {cispo[1]:g} ({same})"
    )
    at = [
        _evidence.function(art, "loss.py", "loss_fn"),
        _evidence.span(art, "loss.py", first, last, look_for=last),
        *prop.path_.call_sites(art),
    ]
    fix = [_evidence.lines(art, "loss.py", FIX_FIRST, FIX_LOOK_FOR)]
    claim = _evidence.claim(hit, detail, method="ran", at=at, fix=fix, domain=found.domain())
    return _evidence.one_claim(CLAIM, claim, f"{art.name}/loss.py:loss_fn")


if __name__ == "__main__":
    raise SystemExit(_common.run(build_report))
