"""Items 7, 8 and 801 as properties of ART's loss path over ART's configuration (issues #37, #50).

One input (a "case") is one training step through ART's loss path as ``_loss_path`` enters it
(ART's packer, ``create_train_inputs``, then each caller of ``loss_fn``: Unsloth's and Tinker's
run whole, Megatron's at ``loss_fn`` with its reduction),
over a covering array of every ``dev.TrainConfig`` value ``loss_fn`` reads and the path's own
dimensions, plus random draws. Each claim names the dimensions it narrows and adds:

- item 7: ``truncated_importance_sampling`` set (U) against the same step without it; the
  packer writes no ``original_logprobs``, so every step is the "without original logprobs"
  case. Holds: every row's loss and
  the logits' gradient equal those of the same step without TIS (4 ulps of the loss dtype,
  relative), or the step raises an error naming the logprobs.
- item 8: old logprobs of the bad branch -inf, +inf, NaN, or finite up to 1e5 below the new
  one (beyond ART's log-ratio bound: a log-ratio of 21 to 1e5), on 1-8 tokens of a row (issue
  #53: a fake that clamps only a row's worst token was judged fixed on one). Holds: every
  row's loss and the gradient finite, or an error naming the logprobs (while the ordinary step
  runs).
- item 801: PPO, A < 0 on the bad branch, one old logprob a sentinel: vLLM's -9999 floor, or
  any value below it, to FP32's largest negative value (ART's old logprobs are FP32: the
  packer's tensor). Holds: every row's loss finite and within twice what one token can add at
  the clip edge (:func:`token_bound`, plus 8 ulps) of the same step with that old logprob
  equal to the new one, finite gradients; or an error naming the logprobs (while the ordinary
  step runs).

Each of the three also takes one Megatron row of 32,768 tokens (:data:`LONG_ROWS`).

The contracts (domain, oracle, tolerance) are :data:`CONTRACTS`; the regression tests in
``repros/regression/`` state the same ones.

Each claim is split (issue #53): its measure (:data:`MEASURES`) runs ART's path in the check's
process and returns each step's raw values (every row's loss, the loss dtype's name, the largest
|gradient| on the logits table, each row's token scale as ART's rows make it; or the error's
text); its judge (:data:`JUDGES`, pure: no ART) applies the bound above, and artbot runs it again
in its own process on the tape. :func:`oracle` is what a repro's ``ORACLES`` holds: the judge,
the covering array as edges and :func:`_loss_path.draw` as the sampler, both ART-free.
"""

from __future__ import annotations

import math
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
# Item 8 in FP16 (Megatron's head dtype): FP16's largest value is below what the audit's clamp
# lets through, so a sequence-level step whose mean log-ratio is between about 11 and 20 (a bad
# old logprob averaged over a long completion) has inf gradients under the audit's own fix
# (measured: 0.5.21's fix written another way, a megatron FP16 row of 5,444 tokens).
FP16_LOSS_ONLY = "in FP16 the loss only (65,504, FP16's largest, is below e^20, the audit's clamp)"
BAD_OLD = ("-inf", "+inf", "nan", 21.0, 200.0, 10000.2, 1e4, 1e5)
# 8's bad tokens a row (issue #53, the review's fake that clamps only a row's one worst token):
# a sampler's floor or a stale logprob hits several tokens of a completion, not one.
BAD_TOKENS = (1, 2, 8)
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
        "extra": {
            "advantage": (-1.0, 1.0, -1e3, 1e-3),
            "bad old": BAD_OLD,
            "bad tokens": BAD_TOKENS,
        },
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
# Rows past the covering array's 8,192 tokens (issue #53, the review's fake that keeps item 7's
# bug for longer rows): ART sets no limit (packed_sequence_length: Field(ge=1)), and long-context
# runs pack 16k-32k tokens a row. One edge each, on Megatron's call (the cheapest: loss_fn with
# its arguments; 0.06 s CPU for item 7's two steps): a training step (grad on) of the covering
# array's first case (every other dimension at its largest) in one Megatron row of 32,768 tokens.
# Items 8 and 801 the same (the review's f13: the -9999 sentinel masked only in rows up to 8,192).
LONG_ROW = 32768
LONG_ROWS = {"7": (LONG_ROW,), "8": (LONG_ROW,), "801": (LONG_ROW,)}


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


# The measure halves (issue #53): ART's path run in the check's process, each step's raw values
# (losses, dtype, largest |gradient|, token scales; or the error's text) for the tape.


def measure_tis(path: path_.Path, case: dict[str, Any]) -> dict[str, Any]:
    """Item 7: the step with the case's TIS bound and the same step without TIS, and the
    largest difference of their gradients on the logits table."""
    plain = path_.run_step(path, dict(case, **{"truncated_importance_sampling": None}))
    with_tis = path_.run_step(path, case)
    out: dict[str, Any] = {"with": path_.raw(with_tis), "without": path_.raw(plain)}
    grads = [s.grad if isinstance(s, path_.Step) else None for s in (with_tis, plain)]
    if grads[0] is not None and grads[1] is not None:
        out["grad_diff"] = float((grads[0] - grads[1]).abs().max())
    return out


def measure_finite(path: path_.Path, case: dict[str, Any]) -> dict[str, Any]:
    """Item 8: the step with the bad old logprob; where it raised, the ordinary step too."""
    bad = path_.run_step(path, case, bad=_bad(case, -1.0))
    out: dict[str, Any] = {"bad": path_.raw(bad)}
    if isinstance(bad, str):
        out["ordinary"] = path_.raw(path_.run_step(path, case))
    return out


def measure_sane(path: path_.Path, case: dict[str, Any]) -> dict[str, Any]:
    """Item 801: the ordinary step and the step with the sentinel old logprob."""
    ordinary = path_.raw(path_.run_step(path, case))
    return {
        "ordinary": ordinary,
        "bad": path_.raw(path_.run_step(path, case, bad=_bad(case, -1.0))),
    }


# The judge halves: pure (torch for float facts, no ART), run again by artbot on the tape.


def _step(raw: Any) -> dict[str, Any]:
    """A step's raw values, checked for shape (a malformed one raises: artbot counts it a
    failure it could not judge)."""
    if not isinstance(raw, dict):
        raise ValueError(f"a step's raw values are not a dict: {str(raw)[:60]}")
    if "error" in raw:
        return {"error": str(raw["error"])}
    losses, scales, grad = raw["losses"], raw.get("token_scales", []), raw.get("grad_max")
    numbers = [*losses, *scales] + ([] if grad is None else [grad])
    if not losses or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in numbers
    ):
        raise ValueError(f"a step's losses, scales or gradient are not numbers: {str(raw)[:60]}")
    return {**raw, "eps": _eps(raw["dtype"])}


def _eps(name: Any) -> float:
    dtype = getattr(torch, str(name), None)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"not a floating dtype: {str(name)[:40]}")
    return float(torch.finfo(dtype).eps)


def _finite(step: dict[str, Any]) -> bool:
    grad = step.get("grad_max")
    return all(math.isfinite(v) for v in step["losses"]) and (grad is None or math.isfinite(grad))


def _error(text: str) -> _domain.Failure | None:
    if CLEAR_ERROR.search(text):
        return None
    return _domain.Failure(f"raised {text[:60]}", "a finite step or a clear error")


def _ordinary(raw: Any) -> dict[str, Any] | _domain.Failure:
    if raw is None:
        return _domain.Failure("no ordinary step measured", "a finite step")
    step = _step(raw)
    if "error" in step:
        return _domain.Failure(f"ordinary step raised {step['error'][:60]}", "a finite step")
    if not _finite(step):
        return _domain.Failure(f"ordinary step: losses {step['losses']}", "finite")
    return step


def judge_finite(case: dict[str, Any], raw: dict[str, Any]) -> _domain.Failure | None:
    """Item 8's bound: the step with the bad old logprob finite (losses and gradients), or a
    clear error while the ordinary step runs."""
    step = _step(raw["bad"])
    if "error" in step:
        failed = _error(step["error"])
        if failed is not None:
            return failed
        ordinary = _ordinary(raw.get("ordinary"))
        return ordinary if isinstance(ordinary, _domain.Failure) else None
    if not _finite(step):
        grad = step.get("grad_max")
        grads = grad is None or math.isfinite(grad)
        if case.get("new dtype") == "fp16" and all(math.isfinite(v) for v in step["losses"]):
            return None  # FP16_LOSS_ONLY
        return _domain.Failure(f"losses {step['losses'][:4]}, gradients finite: {grads}", "finite")
    return None


def judge_sane(case: dict[str, Any], raw: dict[str, Any]) -> _domain.Failure | None:
    """Item 801's bound: every row's loss with the sentinel within :func:`token_bound` (+8
    ulps) of the ordinary step's, finite gradients; or a clear error."""
    ordinary = _ordinary(raw["ordinary"])
    if isinstance(ordinary, _domain.Failure):
        return ordinary
    step = _step(raw["bad"])
    if "error" in step:
        return _error(step["error"])
    if not _finite(step):
        return _domain.Failure(f"losses {step['losses']}", "finite, with finite gradients")
    rows = (step["losses"], ordinary["losses"], ordinary["token_scales"])
    if len({len(r) for r in rows}) != 1:
        return _domain.Failure(f"{len(rows[0])} rows' losses", f"{len(rows[1])} rows, as ordinary")
    for got, want, scale in zip(*rows, strict=True):
        bound = token_bound(case, scale) + 8 * step["eps"] * abs(want)
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
    return SANE_FACTOR * (1 + epsilon_high) * abs(scale)


def judge_tis(case: dict[str, Any], raw: dict[str, Any]) -> _domain.Failure | None:
    """Item 7's bound: every row's loss with TIS equal to the step's without it (4 ulps of the
    loss dtype, relative), the gradients too (4 ulps of the new logprobs' dtype of the largest
    |gradient|); or a clear error."""
    plain = _step(raw["without"])
    if "error" in plain:
        return _domain.Failure(f"the step without TIS raised {plain['error'][:60]}", "a step")
    with_tis = _step(raw["with"])
    if "error" in with_tis:
        return _error(with_tis["error"])
    if len(with_tis["losses"]) != len(plain["losses"]):
        return _domain.Failure(f"{len(with_tis['losses'])} rows", f"{len(plain['losses'])} rows")
    for a, b in zip(with_tis["losses"], plain["losses"], strict=True):
        bound = 4 * with_tis["eps"] * max(abs(a), abs(b), 1e-30)
        if not abs(a - b) <= bound:
            return _domain.Failure(f"loss {a:.6g} (without TIS {b:.6g})", f"|diff| <= {bound:.3g}")
    if with_tis.get("grad_max") is not None and plain.get("grad_max") is not None:
        scale, diff = plain["grad_max"], raw.get("grad_diff")
        tol = 4 * float(torch.finfo(path_.DTYPES[case["new dtype"]]).eps) * scale
        if not isinstance(diff, int | float) or not diff <= tol:
            return _domain.Failure(
                f"gradient off by {diff if diff is None else f'{diff:.3g}'} "
                f"(max |gradient| {scale:.3g})",
                f"{tol:.3g}",
            )
    return None


MEASURES: dict[str, Callable[[path_.Path, dict[str, Any]], dict[str, Any]]] = {
    "7": measure_tis,
    "8": measure_finite,
    "801": measure_sane,
}
JUDGES: dict[str, _domain.Judge] = {"7": judge_tis, "8": judge_finite, "801": judge_sane}


def oracle(item: str) -> _domain.Oracle:
    """Item ``item``'s claim as artbot judges it (the repro's ``ORACLES``): the judge, the
    covering array as its edges and random draws of the same domain (ART-free)."""
    contract = CONTRACTS[item]
    fixed, extra = contract["fixed"], contract["extra"]

    def edges() -> list[dict[str, Any]]:
        cases = path_.cases(fixed, extra)
        first = dict(cases[0], caller="megatron", grad=True)  # a training step: a backward
        return cases + [dict(first, **{"row tokens": n}) for n in LONG_ROWS.get(item, ())]

    return _domain.Oracle(
        judge=JUDGES[item],
        edges=edges,
        sample=lambda rng: path_.draw(fixed, extra, rng),
        draws=DRAWS[item],
    )


def shrink(item: str) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    """Simpler cases: each dimension set to its first (simplest) value, one at a time, the
    caller and the row's size first (a long Unsloth row is the slowest step to try again)."""
    contract = CONTRACTS[item]
    dims = {**path_.CONFIG_VALUES, **path_.PATH_VALUES, **contract["fixed"], **contract["extra"]}
    dims = {k: dims[k] for k in ("caller", "row tokens")} | dims

    def simpler(case: dict[str, Any]) -> list[dict[str, Any]]:
        return [_domain.replace(case, k, v[0]) for k, v in dims.items() if case.get(k) != v[0]]

    return simpler


def search(art: Any, item: str, claim: str, oracle: _domain.Oracle) -> _domain.Found:
    """Item ``item``'s property over its contract's domain, with ART's modules from ``art``: the
    inputs artbot drew (``art.plan[claim]``), else the oracle's edges and draws (seed 0), each
    measured here and judged by ``oracle.judge``, on ``art``'s tape for artbot to judge again.
    An ordinary step through each caller runs first, outside the search: if it raises, the code
    is broken, and its error (with ART's file and line) is the result, not a counterexample."""
    with path_.callers_.loaded(art) as callers:
        path = path_.Path.load(art, callers)
        for caller in path_.PATH_VALUES["caller"]:
            path_.run_step(path, path_.base_case(caller=caller), strict=True)
        edges = oracle.edges() if oracle.edges is not None else []
        measure = MEASURES[item]
        found = _domain.search(
            covers=covers(item),
            edges=edges,
            sample=oracle.sample or (lambda rng: edges[0]),
            claim=claim,
            channel=art if hasattr(art, "tape") else None,
            measure=lambda case: measure(path, case),
            judge=oracle.judge,
            shrink=shrink(item),
            max_inputs=len(edges) + oracle.draws,
        )
        read = path_.config_keys_read(path)
        found.extra["stand-ins"] = callers.whole.said()
    unvaried = [k for k in read if k not in path_.CONFIG_VALUES]
    found.extra["config keys read"] = read
    found.extra["not varied"] = unvaried
    return found


def keys_note(found: _domain.Found) -> str:
    """Which config keys ``loss_fn`` read (run, not read from its text), and any not varied;
    the stand-ins the callers ran with, and why Megatron's is not run."""
    read = found.extra.get("config keys read", [])
    unvaried = found.extra.get("not varied", [])
    note = f"loss_fn read {len(read)} config keys, every one varied"
    if unvaried:
        note = f"loss_fn read {len(read)} config keys; not varied: {', '.join(unvaried)}"
    stood_in = ["trainer, PEFT model and Tinker client (artbot's)"]
    stood_in += found.extra.get("stand-ins", [])
    return f"{note}; callers run with stand-ins: {', '.join(stood_in)}; {path_.callers_.NOT_RUN}"
