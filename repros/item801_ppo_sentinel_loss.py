"""Follow-up 801 (artbot's own, found while checking the fix for audit item 8): after the +-20
clamp, a finite sentinel old logprob still dominates the PPO loss.

Models ``loss_fn`` of ART's ``art/loss.py`` as released in openpipe-art 0.5.21 and 0.5.23 (the
function starts at line 264 in both), through the lines item 8's fix added: 291-295 replace
*non-finite* old logprobs by the detached new ones, and 301-302 compute
``prob_ratio = torch.exp(logprob_diff.clamp(-log_ratio_bound, log_ratio_bound))`` with a bound of
20 for FP32. A sentinel such as -9999 is finite, so it is not replaced; its log-ratio
new - old = about 9998 is clamped to 20, and the PPO term -min(r * A, clip(r) * A) with A = -1 is
exp(20) = 4.85e8 on that token, with a zero gradient (the clamp's).

What is measured: one sequence of three trainable tokens, new logprobs [-1.2, -0.7, -2.1], old
logprobs equal to them except token 1's, which is -9999 (or -inf); PPO, A = -1, mean reduction.
The loss, the gradient reaching token 1's logprob, and the same step with every old logprob
finite (loss 1.0). The finding holds when the sentinel step's loss is more than twice the
all-finite step's (item 8's own test of a sane loss), or when the sentinel token gets no
gradient where the all-finite step gives it one (the clamp, not the fix, bounded the loss).
The suggested fix, applied beside it: an old logprob whose log-ratio reaches the bound is
treated as missing, as a NaN one is.

Assumptions: token-level importance sampling, no TIS, KL or Kimi tau; ART's PPO epsilons
0.2 / 0.2; weights 1. The model of loss_fn is ``_art_loss.py`` (shared with items 7 and 8) with
0.5.21's knobs set. ``check_art`` runs ART's own ``loss_fn`` from a release on the same inputs.

``check_art`` runs ART itself: its loss path from the packer to ``loss_fn`` under both callers'
reductions, over every configuration value ``loss_fn`` reads (``_loss_path``), with the claim's
contract (``_ppo_property.CONTRACTS``); the model above is for the records' measurement.
The claim is split (issue #53): ``ORACLES`` draws its inputs without ART, the check's process
measures ART's steps on them, and artbot judges what was measured in its own process.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _art_loss  # noqa: E402
import _common  # noqa: E402
import _evidence  # noqa: E402
import _ppo_property as prop  # noqa: E402

CLAIM = "sentinel-dominates-loss"
# The claim as artbot judges it, outside the check's process (issue #53): the judge of
# _ppo_property, the covering array and random draws of the claim's domain (ART-free).
ORACLES = {CLAIM: prop.oracle("801")}

NEW = (-1.2, -0.7, -2.1)
SENTINELS = {"-9999": -9999.0, "-inf": float("-inf")}
BAD_TOKEN = 1
BOUND = 20.0  # ART 0.5.21's log_ratio_bound for FP32
SANE_FACTOR = 2.0
CLAMP_LINE = "prob_ratio = torch.exp(logprob_diff.clamp(-log_ratio_bound, log_ratio_bound))"

loss_fn_0521 = _art_loss.make_loss_fn(log_ratio_bound=BOUND, replace_non_finite_old_logprobs=True)


def loss_fn_suggested(inputs: Any, new: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
    """0.5.21's loss with the suggested fix: old logprobs whose log-ratio reaches the bound are
    replaced by the detached new ones before the loss, as non-finite ones are."""
    old = inputs.old_logprobs
    stale = (new.detach() - old) >= BOUND
    inputs.old_logprobs = torch.where(stale, new.detach(), old)
    return loss_fn_0521(inputs, new, *args, **kwargs)


def run_step(impl: Callable[..., Any], inputs_type: Any, old_bad: float | None) -> dict[str, Any]:
    """One PPO step with A = -1 through ``impl`` (ART's ``loss_fn`` signature)."""
    new = torch.tensor([NEW], dtype=torch.float32, requires_grad=True)
    old = new.detach().clone()
    if old_bad is not None:
        old[0, BAD_TOKEN] = old_bad
    inputs = inputs_type(
        assistant_mask=torch.ones(1, 3, dtype=torch.bool),
        old_logprobs=old,
        advantages=torch.full((1, 3), -1.0),
        weights=torch.ones(1, 3),
        group_ids=torch.ones(1, 3, dtype=torch.int64),
    )
    loss = impl(inputs, new, None, None, {"ppo": True}).policy_loss
    loss.backward()
    assert new.grad is not None
    return {"loss": float(loss.detach()), "grad_bad_token": float(new.grad[0, BAD_TOKEN])}


def measure(impl: Callable[..., Any] | None = None, inputs_type: Any = None) -> dict[str, Any]:
    impl = impl or loss_fn_0521
    inputs_type = inputs_type or _art_loss.AlignedInputs
    out = {label: run_step(impl, inputs_type, bad) for label, bad in SENTINELS.items()}
    out["all finite"] = run_step(impl, inputs_type, None)
    return out


def dominated(measured: dict[str, Any]) -> bool:
    """The -9999 step's loss is not within twice the all-finite step's, or is not finite; or
    the sentinel still sets its token's term: that token gets no gradient (the clamp's) where
    the all-finite step gives it one. A bound tightened to 1 brings the loss within twice
    (1.57) while the sentinel's clamped ratio is still its token's term; the suggested fix
    treats the token as sampled under the current policy, so its gradient is the all-finite
    step's."""
    bad, control = measured["-9999"], measured["all finite"]
    loss, grad = bad["loss"], bad["grad_bad_token"]
    if not (math.isfinite(loss) and math.isfinite(grad)):
        return True
    dropped = grad == 0.0 and control["grad_bad_token"] != 0.0
    return abs(loss) > SANE_FACTOR * abs(control["loss"]) or dropped


def build_report() -> _common.Report:
    """Follow-up 801: a -9999 old logprob after 0.5.21's clamp."""
    released, fixed = measure(), measure(loss_fn_suggested)
    report = _common.Report(
        item="801",
        title="A finite sentinel old logprob still dominates the PPO loss after the clamp",
        models="art/loss.py loss_fn as released in 0.5.21 and 0.5.23 (L291-L295 non-finite "
        "fallback, L301-L302 log-ratio clamped to +-20); follows audit item 8",
        setting={
            "tokens": "3 trainable, new logprobs [-1.2, -0.7, -2.1], old = new but token 1",
            "step": "PPO (epsilon 0.2 / 0.2), A = -1, mean over tokens",
            "fix": "old logprobs whose log-ratio reaches the bound treated as missing",
        },
    )
    for label in (*SENTINELS, "all finite"):
        report.measure(
            f"old {label}: loss", repr(released[label]["loss"]), fixed=repr(fixed[label]["loss"])
        )
        report.measure(
            f"old {label}: gradient on token 1's logprob",
            released[label]["grad_bad_token"],
            fixed=fixed[label]["grad_bad_token"],
        )
    report.note(
        "exp(20) / 3 = 1.617e8: the clamped ratio of one token of three, in the mean; the clamp "
        "gives that token a zero gradient, so the step's loss is the sentinel's alone."
    )
    report.claim("sentinel-dominates-loss", dominated(released))
    return report


def check_art(art: Any) -> dict[str, Any]:
    """Follow-up 801's property over ART's loss path and configuration (``_ppo_property``),
    and the record's own step for the detail."""
    loss = art.load("loss.py")
    found = prop.search(art, "801", CLAIM, ORACLES[CLAIM])
    try:
        measured = measure(loss.loss_fn, loss.AlignedLossInputs)
    except Exception as exc:  # a fix may raise a clear error: the property judged it
        step = f"the record's step raises {type(exc).__name__}: {exc}"[:300]
    else:
        bad, control = measured["-9999"], measured["all finite"]
        step = (
            f"PPO, A = -1, old -9999 on 1 of 3 tokens: loss {bad['loss']!r}, gradient on that "
            f"token {bad['grad_bad_token']:g} (every old logprob finite: loss "
            f"{control['loss']:.4g})"
        )
    detail = f"{found.summary()}; {prop.keys_note(found)}; {step}"
    at = [
        _evidence.lines(art, "loss.py", CLAMP_LINE),
        _evidence.function(art, "loss.py", "loss_fn"),
        *prop.path_.call_sites(art),
    ]
    claim = _evidence.claim(not found.holds, detail, method="ran", at=at, domain=found.domain())
    return _evidence.one_claim(CLAIM, claim, f"{art.name}/loss.py:loss_fn")


if __name__ == "__main__":
    raise SystemExit(_common.run(build_report))
