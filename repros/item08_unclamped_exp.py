"""Item 8: unclamped exp(new - old) on the PPO path.

Models ``loss_fn`` of ART's ``art/loss.py`` as released in openpipe-art 0.5.20 (lines 263-404;
the audit's commit e2a406a48 is in no release, and its loss.py anchors sit at their lines in
0.5.20), the token-level path through lines 271-299 (masking, the NaN-only fallback for old
logprobs, ``prob_ratio = torch.exp(logprob_diff)`` with no clamp) and 363-374 (PPO's
``-min(r * A, clip(r) * A)`` and CISPO's ``-(clip(r.detach()) * A * new_logprobs)``).

What is measured: one sequence of four trainable tokens whose new logprobs come from FP32 logits
through ``log_softmax`` (as on the Megatron and TrainerRank heads); token 1's old logprob is
replaced by -inf or by a sentinel of -9999. For PPO and CISPO and A = +1 and -1: the loss, whether
it is finite, and whether the gradients reaching the logprobs and the logits are finite. The audit
expects PPO with A < 0 to give loss = +inf and NaN gradients, and CISPO to stay finite. The same
is measured with ART 0.5.21's fix (loss.py L291-L302): non-finite old logprobs replaced by the
detached new ones, as NaN ones already were, and the log-ratio clamped to +-20 before exp. A fix
holds when the loss and gradients are finite and the loss is sane: within twice the loss of the
same step with every old logprob finite. Controls: the same bad value on a masked
(non-trainable) token, and all-finite old logprobs.

Assumptions:
- Token-level importance sampling; no TIS (not set here), KL penalty or Kimi tau (the model
  raises on those).
- FP32 logits and logprobs; vocabulary 16 and random logits (the overflow does not depend on them:
  exp(x) is inf in FP32 for any x > 88.7, and new - (-9999) is about 9999).
- ART's defaults: PPO epsilon 0.2/0.2, CISPO epsilon 1.0/4.0; mean reduction; weights 1.
- Inputs are already aligned (``AlignedInputs`` stands in for ART's ``AlignedLossInputs``).
- The fix is ART 0.5.21's: ``~torch.isfinite`` instead of ``torch.isnan`` in the fallback, and
  ``exp(logprob_diff.clamp(-20, 20))`` for FP32 (the audit suggests the clamp alone, which keeps
  a -inf old logprob's loss finite but about 1.2e8, with a zero gradient on that token). A
  sentinel such as -9999 is finite, so 0.5.21 does not replace it: its clamped ratio exp(20)
  still makes a huge loss, which this script reports.

The model of ``loss_fn`` is in ``_art_loss.py`` (shared with item 7), whose docstring lists the
lines it covers; this script sets its ``log_ratio_bound`` and
``replace_non_finite_old_logprobs`` knobs for the fix.

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
import _common  # noqa: E402
import _evidence  # noqa: E402
import _ppo_property as prop  # noqa: E402
from _art_loss import AlignedInputs, LossFn, make_loss_fn  # noqa: E402

CLAIM = "inf-loss-nan-gradients"
# The claim as artbot judges it, outside the check's process (issue #53): the judge of
# _ppo_property, the covering array and random draws of the claim's domain (ART-free).
ORACLES = {CLAIM: prop.oracle("8")}

BAD_OLD_LOGPROBS = {"-inf": float("-inf"), "-9999": -9999.0}
LOG_RATIO_BOUND = 20.0  # ART 0.5.21's bound for FP32 log-ratios (the audit's example too)
SANE_FACTOR = 2.0  # a sane loss: within this factor of the all-finite step's
SEQ_LEN, VOCAB, BAD_TOKEN = 4, 16, 1

loss_fn = make_loss_fn()
loss_fn_fixed = make_loss_fn(log_ratio_bound=LOG_RATIO_BOUND, replace_non_finite_old_logprobs=True)


def run_case(
    impl: LossFn,
    *,
    ppo: bool,
    advantage: float,
    bad_old_logprob: float | None,
    bad_token_trainable: bool = True,
) -> dict[str, Any]:
    """One forward and backward through ``impl``; finiteness of the loss and of its gradients."""
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(1, SEQ_LEN, VOCAB, generator=gen, dtype=torch.float32)
    logits.requires_grad_(True)
    targets = torch.randint(0, VOCAB, (1, SEQ_LEN, 1), generator=gen)
    new_logprobs = torch.log_softmax(logits, dim=-1).gather(-1, targets).squeeze(-1)
    new_logprobs.retain_grad()
    # A little off-policy drift on the finite tokens, then one bad old logprob.
    old = new_logprobs.detach() + 0.05 * torch.randn(1, SEQ_LEN, generator=gen)
    if bad_old_logprob is not None:
        old[0, BAD_TOKEN] = bad_old_logprob
    mask = torch.ones(1, SEQ_LEN, dtype=torch.bool)
    if not bad_token_trainable:
        mask[0, BAD_TOKEN] = False
    inputs = AlignedInputs(
        assistant_mask=mask,
        old_logprobs=old,
        advantages=torch.full((1, SEQ_LEN), advantage, dtype=torch.float32),
        weights=torch.ones(1, SEQ_LEN, dtype=torch.float32),
        group_ids=torch.ones(1, SEQ_LEN, dtype=torch.int64),
    )
    loss = impl(inputs, new_logprobs, None, None, {"ppo": ppo}).policy_loss
    loss.backward()
    grad_logits = logits.grad
    return {
        "loss": float(loss.detach()),
        "loss_finite": math.isfinite(float(loss.detach())),
        "grad_logprobs_finite": bool(torch.isfinite(new_logprobs.grad).all()),
        "grad_logprob_bad_token": float(new_logprobs.grad[0, BAD_TOKEN]),
        "grad_logits_finite": bool(torch.isfinite(grad_logits).all()),
        "grad_logits_nan_count": int(torch.isnan(grad_logits).sum()),
        "grad_logits_nonfinite_count": int((~torch.isfinite(grad_logits)).sum()),
    }


def measure(impl: LossFn | None = None) -> dict[str, Any]:
    """Every case: {algo} A={sign} old={bad value}, plus the masked-token and finite controls.

    ``impl``: a ``_art_loss.LossFn``, ART's ``loss_fn`` or the model (the default).
    """
    impl = impl or loss_fn
    cases: dict[str, dict[str, Any]] = {}
    for algo, ppo in (("ppo", True), ("cispo", False)):
        for advantage in (-1.0, 1.0):
            for label, bad in BAD_OLD_LOGPROBS.items():
                cases[f"{algo} A={advantage:+g} old={label}"] = run_case(
                    impl, ppo=ppo, advantage=advantage, bad_old_logprob=bad
                )
            cases[f"{algo} A={advantage:+g} old=-inf on a masked token"] = run_case(
                impl,
                ppo=ppo,
                advantage=advantage,
                bad_old_logprob=float("-inf"),
                bad_token_trainable=False,
            )
            cases[f"{algo} A={advantage:+g} all old finite"] = run_case(
                impl, ppo=ppo, advantage=advantage, bad_old_logprob=None
            )
    return {"cases": cases}


def _all_finite(case: dict[str, Any]) -> bool:
    return case["loss_finite"] and case["grad_logprobs_finite"] and case["grad_logits_finite"]


def _grad_counts(case: dict[str, Any]) -> str:
    return f"{case['grad_logits_nonfinite_count']} ({case['grad_logits_nan_count']})"


def is_sane(cases: dict[str, dict[str, Any]], label: str, algo: str = "ppo A=-1") -> bool:
    """The step with one bad old logprob has a finite loss and gradients, and its loss is
    within SANE_FACTOR of the same step with every old logprob finite."""
    case, control = cases[f"{algo} old={label}"], cases[f"{algo} all old finite"]
    return _all_finite(case) and abs(case["loss"]) <= SANE_FACTOR * abs(control["loss"])


def is_reproduced(measured: dict[str, Any]) -> bool:
    """The audit's claim: PPO with A < 0 and an old logprob of -inf or -9999 gives an infinite
    loss and non-finite gradients. Any one bad input that still fails (its loss or any gradient
    not finite) means reproduced: a fix must hold for every input, so one that guards -inf but
    leaves -9999 unclamped is no fix."""
    cases = measured["cases"]
    return any(not _all_finite(cases[f"ppo A=-1 old={label}"]) for label in BAD_OLD_LOGPROBS)


def build_report() -> _common.Report:
    """Item 8: loss and gradient finiteness with an old logprob of -inf or -9999."""
    _common.seed_everything(0)
    as_cited = measure(loss_fn)
    fixed = measure(loss_fn_fixed)
    report = _common.Report(
        item="8",
        title="Unclamped exp(new - old) on the PPO path",
        models="art/loss.py loss_fn as released in 0.5.20 (lines 263-404; audit: loss.py#L299, "
        "#L363-L367 at e2a406a48)",
        setting={
            "tokens": f"{SEQ_LEN} trainable, FP32 logits (vocab {VOCAB}) -> log_softmax",
            "bad old logprob": f"token {BAD_TOKEN}: -inf or -9999",
            "PPO epsilon": "0.2 / 0.2",
            "CISPO epsilon": "1.0 / 4.0",
            "fix": "ART 0.5.21's: non-finite old logprobs replaced by the new ones, log-ratio "
            f"clamped to +-{LOG_RATIO_BOUND:g} before exp",
        },
    )
    for name, case in as_cited["cases"].items():
        fixed_case = fixed["cases"][name]
        audit = None
        if name.startswith("ppo A=-1 old=-") and "masked" not in name:
            audit = "loss +inf, gradients NaN"
        elif name.startswith("cispo") and "masked" not in name and "finite" not in name:
            audit = "safe (finite)"
        report.measure(f"{name}: loss", case["loss"], fixed=fixed_case["loss"], audit=audit)
        report.measure(
            f"{name}: loss and gradients all finite",
            _all_finite(case),
            fixed=_all_finite(fixed_case),
            note=f"non-finite (NaN) logits-grad entries: {_grad_counts(case)} as cited, "
            f"{_grad_counts(fixed_case)} fixed",
        )
    ppo_pos = [as_cited["cases"][f"ppo A=+1 old={label}"] for label in BAD_OLD_LOGPROBS]
    if all(c["loss_finite"] and not c["grad_logits_finite"] for c in ppo_pos):
        report.note(
            "PPO with A > 0 is not safe either: min() picks the finite clipped term, so the loss "
            "is finite, but the backward of exp multiplies a zero gradient by exp(inf) = inf, "
            "which is NaN."
        )
    for label in BAD_OLD_LOGPROBS:
        report.measure(
            f"fixed run, ppo A=-1 old={label}: loss finite and sane",
            is_sane(fixed["cases"], label),
            note=f"sane: within {SANE_FACTOR:g}x the loss with every old logprob finite",
        )
    sentinel = fixed["cases"]["ppo A=-1 old=-9999"]
    if sentinel["loss_finite"] and not is_sane(fixed["cases"], "-9999"):
        report.note(
            f"With 0.5.21's fix, a -9999 sentinel is finite, so it is not replaced: the clamped "
            f"ratio exp({LOG_RATIO_BOUND:g}) gives PPO A=-1 a finite but huge loss "
            f"({sentinel['loss']:.3g} over {SEQ_LEN} tokens) and a gradient of "
            f"{sentinel['grad_logprob_bad_token']:g} on that token's logprob."
        )
    report.reproduced = is_reproduced(as_cited)
    report.claim("inf-loss-nan-gradients", report.reproduced)
    return report


# The lines that fix the claim, as ART 0.5.21 wrote them.
FIX_FALLBACK = "~torch.isfinite(old_logprobs),"
FIX_BOUND = "log_ratio_bound = 10.0 if logprob_diff.dtype == torch.float16 else 20.0"
FIX_CLAMP = "prob_ratio = torch.exp(logprob_diff.clamp(-log_ratio_bound, log_ratio_bound))"


def _records_step(loss: Any) -> str:
    """The records' own step (-inf and -9999 on one of four tokens), for the detail."""
    try:
        cases = measure(loss.loss_fn)["cases"]
    except Exception as exc:  # a fix may raise a clear error: the property judged it
        return f"the records' step raises {type(exc).__name__}: {exc}"[:300]
    parts = []
    for label in BAD_OLD_LOGPROBS:
        case = cases[f"ppo A=-1 old={label}"]
        finite = case["grad_logits_finite"] and case["grad_logprobs_finite"]
        sane = " (sane)" if is_sane(cases, label) else " (not sane)" if case["loss_finite"] else ""
        parts.append(
            f"old {label}: loss {case['loss']:.4g}{sane}, "
            f"gradients {'finite' if finite else 'not finite'}"
        )
    control = cases["ppo A=-1 all old finite"]["loss"]
    return f"PPO, A = -1, {'; '.join(parts)} (all old finite: loss {control:.4g})"


def check_art(art: Any) -> dict[str, Any]:
    """Item 8's property over ART's loss path and configuration (``_ppo_property``), and the
    records' own step (-inf and -9999) for the detail."""
    found = prop.search(art, "8", CLAIM, ORACLES[CLAIM])
    detail = f"{found.summary()}; {prop.keys_note(found)}; {_records_step(art.load('loss.py'))}"
    fix = [
        _evidence.lines(art, "loss.py", FIX_FALLBACK),
        _evidence.lines(art, "loss.py", FIX_BOUND, FIX_CLAMP),
    ]
    claim = _evidence.claim(
        not found.holds,
        detail,
        method="ran",
        at=[_evidence.function(art, "loss.py", "loss_fn"), *prop.path_.call_sites(art)],
        fix=fix,
        domain=found.domain(),
    )
    return _evidence.one_claim(CLAIM, claim, f"{art.name}/loss.py:loss_fn")


if __name__ == "__main__":
    raise SystemExit(_common.run(build_report))
