"""Items 7, 8 and 801 as properties of ART's loss path over ART's configuration (issues #37, #50).

One input (a "case") is one training step through ART's loss path as ``_loss_path`` enters it
(ART's packer, ``create_train_inputs``, ``LossInputs``, ``loss_fn`` with either reduction),
over a covering array of every ``dev.TrainConfig`` value ``loss_fn`` reads and the path's own
dimensions, plus random draws. Each claim names the dimensions it narrows and adds:

- item 7: ``truncated_importance_sampling`` set (U) against the same step without it; the
  packer writes no ``original_logprobs``, so every step is the "without original logprobs"
  case. Holds: every row's loss and the logits' gradient equal those of the same step without
  TIS (4 ulps of the loss dtype, relative), or the step raises an error naming the logprobs.
- item 8: one old logprob of the bad branch -inf, +inf, NaN, or finite up to 1e5 below the new
  one (beyond ART's log-ratio bound: a log-ratio of 21 to 1e5). Holds: every row's loss and the
  gradient finite, or an error naming the logprobs (while the ordinary step runs).
- item 801: PPO, A < 0 on the bad branch, one old logprob a sentinel: vLLM's -9999 floor, or
  any value below it, to FP32's largest negative value (ART's old logprobs are FP32: the
  packer's tensor). Holds: every row's loss finite and within twice what one token can add at
  the clip edge (:func:`token_bound`, plus 8 ulps) of the same step with that old logprob
  equal to the new one, finite gradients; or an error naming the logprobs (while the ordinary
  step runs).

The contracts (domain, oracle, tolerance) are :data:`CONTRACTS`; the regression tests in
``repros/regression/`` state the same ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import _domain
import _loss_path as path_
import torch

CLEAR_ERROR = re.compile(r"log[ _-]?prob", re.IGNORECASE)
SANE_FACTOR = 2.0
FP32_MAX = float(torch.finfo(torch.float32).max)
# 801's sentinels: vLLM's floor (serving.py: max(logprob, -9999.0)) and anything below it.
SENTINELS = (-9999.0, -9999.5, -1e4, -1e5, -1e9, -1e30, -FP32_MAX)
# 8's bad old logprobs: non-finite, or finite beyond the bound (a log-ratio past 20) to 1e5,
# ten times below vLLM's -9999 floor; the old value is new - d for a finite d. Not to FP32's
# largest: with kimi_k2_tau set, 0.5.21's fix lets an old logprob of -1e30 reach the advantage
# (A - tau * log-ratio, unclamped): a loss of 3.5e36 on one row, inf under "sum" or a large A.
# That is a sentinel dominating the loss, follow-up 801's contract (its sentinels go to FP32's
# largest), not the audit's unclamped exp.
BAD_OLD = ("-inf", "+inf", "nan", 21.0, 200.0, 10000.2, 1e4, 1e5)
NON_FINITE = {"-inf": float("-inf"), "nan": float("nan"), "+inf": float("inf")}

# What each claim narrows (``fixed``) and adds (``extra``) to _loss_path's domain.
CONTRACTS: dict[str, dict[str, Any]] = {
    "7": {
        "fixed": {"truncated_importance_sampling": (2.0, 2, 1.01, 10.0)},
        "extra": {"advantage": (1.0, -1.0, 1e-3, -1e3), "log-ratio scale": (0.05, 1.0, 3.0)},
        "oracle": "the same step without truncated_importance_sampling, 4 ulps",
    },
    "8": {
        "fixed": {},
        "extra": {"advantage": (-1.0, 1.0, -1e3, 1e-3), "bad old": BAD_OLD},
        "oracle": "finite loss and gradients",
    },
    "801": {
        "fixed": {"ppo": (True,)},
        "extra": {"advantage": (-1.0, -1e-3, -1e3), "bad old": SENTINELS},
        "oracle": "within 2 (1 + epsilon_high) |A w| / n (+8 ulps) of the step with "
        "that old logprob equal to the new one",
    },
}
DRAWS = {"7": 24, "8": 24, "801": 24}


def covers(item: str) -> str:
    """The claim's domain and call path in words, for its verdict."""
    contract = CONTRACTS[item]
    domain = path_.describe(contract["fixed"], contract["extra"])
    return f"entered at {path_.CALL_PATH}; {domain} -> {contract['oracle']}"


def _bad(case: dict[str, Any], new: float) -> float:
    value = case["bad old"]
    if isinstance(value, str):
        return NON_FINITE[value]
    if value < 0:  # a sentinel: the old logprob itself
        return float(value)
    return max(new - float(value), -FP32_MAX)


def _error(text: str) -> _domain.Failure | None:
    if CLEAR_ERROR.search(text):
        return None
    return _domain.Failure(f"raised {text[:60]}", "a finite step or a clear error")


def _ordinary(path: path_.Path, case: dict[str, Any]) -> path_.Step | _domain.Failure:
    step = path_.run_step(path, case)
    if isinstance(step, str):
        return _domain.Failure(f"ordinary step raised {step[:60]}", "a finite step")
    if not step.finite:
        return _domain.Failure(f"ordinary step: losses {step.losses}", "finite")
    return step


def finite_step(path: path_.Path, case: dict[str, Any]) -> _domain.Failure | None:
    """Item 8's predicate on one case."""
    step = path_.run_step(path, case, bad=_bad(case, -1.0))
    if isinstance(step, str):
        failed = _error(step)
        if failed is not None:
            return failed
        ordinary = _ordinary(path, case)
        return ordinary if isinstance(ordinary, _domain.Failure) else None
    if not step.finite:
        grads = step.grad is None or bool(torch.isfinite(step.grad).all())
        return _domain.Failure(f"losses {step.losses[:4]}, gradients finite: {grads}", "finite")
    return None


def sane_step(path: path_.Path, case: dict[str, Any]) -> _domain.Failure | None:
    """Item 801's predicate on one case."""
    ordinary = _ordinary(path, case)
    if isinstance(ordinary, _domain.Failure):
        return ordinary
    step = path_.run_step(path, case, bad=_bad(case, -1.0))
    if isinstance(step, str):
        return _error(step)
    if not step.finite:
        return _domain.Failure(f"losses {step.losses}", "finite, with finite gradients")
    ulp = float(torch.finfo(step.dtype).eps)
    rows = zip(step.losses, ordinary.losses, ordinary.token_scales, strict=True)
    for got, want, scale in rows:
        bound = token_bound(case, scale) + 8 * ulp * abs(want)
        if abs(got - want) > bound:
            return _domain.Failure(float(f"{got:.6g}"), f"{want:.6g} +- {bound:.3g}")
    return None


def token_bound(case: dict[str, Any], scale: float) -> float:
    """What one token can add to a row's PPO loss at the clip edge, twice: 2 (1 + epsilon_high)
    |A w| / n, ``scale`` the row's largest |A w| / n (n: the reduction's denominator, the row's
    trainable tokens under "mean", 1 under "sum"). 801's contract: the sentinel's step is within
    this of the ordinary step."""
    epsilon = case.get("epsilon") or 0.2
    epsilon_high = case.get("epsilon_high") or epsilon
    return SANE_FACTOR * (1 + epsilon_high) * scale


def tis_step(path: path_.Path, case: dict[str, Any]) -> _domain.Failure | None:
    """Item 7's predicate on one case."""
    plain_case = dict(case, **{"truncated_importance_sampling": None})
    plain = path_.run_step(path, plain_case)
    if isinstance(plain, str):
        return _domain.Failure(f"the step without TIS raised {plain[:60]}", "a step")
    with_tis = path_.run_step(path, case)
    if isinstance(with_tis, str):
        return _error(with_tis)
    ulp = float(torch.finfo(with_tis.dtype).eps)
    for a, b in zip(with_tis.losses, plain.losses, strict=True):
        bound = 4 * ulp * max(abs(a), abs(b), 1e-30)
        if not abs(a - b) <= bound:
            return _domain.Failure(f"loss {a:.6g} (without TIS {b:.6g})", f"|diff| <= {bound:.3g}")
    if with_tis.grad is not None and plain.grad is not None:
        scale = float(plain.grad.abs().max())
        tol = 4 * float(torch.finfo(path_.DTYPES[case["new dtype"]]).eps) * scale
        diff = float((with_tis.grad - plain.grad).abs().max())
        if not diff <= tol:
            return _domain.Failure(
                f"gradient off by {diff:.3g} (max |gradient| {scale:.3g})", f"{tol:.3g}"
            )
    return None


PREDICATES: dict[str, Callable[[path_.Path, dict[str, Any]], _domain.Failure | None]] = {
    "7": tis_step,
    "8": finite_step,
    "801": sane_step,
}


def shrink(item: str) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    """Simpler cases: each dimension set to its first (simplest) value, one at a time."""
    contract = CONTRACTS[item]
    dims = {**path_.CONFIG_VALUES, **path_.PATH_VALUES, **contract["fixed"], **contract["extra"]}

    def simpler(case: dict[str, Any]) -> list[dict[str, Any]]:
        return [_domain.replace(case, k, v[0]) for k, v in dims.items() if case.get(k) != v[0]]

    return simpler


def search(art: Any, item: str) -> _domain.Found:
    """Item ``item``'s property over its contract's domain, with ART's modules from ``art``. An
    ordinary step runs first, outside the search: if it raises, the code is broken, and its
    error (with ART's file and line) is the result, not a counterexample."""
    path = path_.Path.load(art)
    path_.run_step(path, path_.base_case(), strict=True)
    contract = CONTRACTS[item]
    edges = list(path_.cases(contract["fixed"], contract["extra"], draws=DRAWS[item]))
    predicate = PREDICATES[item]
    found = _domain.search(
        covers=covers(item),
        edges=edges,
        sample=lambda rng: edges[0],
        holds=lambda case: predicate(path, case),
        shrink=shrink(item),
        max_inputs=len(edges),
    )
    read = path_.config_keys_read(path)
    unvaried = [k for k in read if k not in path_.CONFIG_VALUES]
    found.extra["config keys read"] = read
    found.extra["not varied"] = unvaried
    return found


def keys_note(found: _domain.Found) -> str:
    """Which config keys ``loss_fn`` read (run, not read from its text), and any not varied."""
    read = found.extra.get("config keys read", [])
    unvaried = found.extra.get("not varied", [])
    note = f"loss_fn read {len(read)} config keys, every one varied"
    if unvaried:
        note = f"loss_fn read {len(read)} config keys; not varied: {', '.join(unvaried)}"
    return note
