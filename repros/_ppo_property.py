"""Items 8 and 801 as properties of ART's ``loss_fn`` over a declared domain (issue #37).

One input (a "case") is a training step through ART's own ``loss_fn`` and ``AlignedLossInputs``:
``rows`` (1-8) sequences of ``tokens`` (1-16) trainable tokens whose new logprobs come from FP32
logits through ``log_softmax``, cast to ``new dtype`` (FP32, BF16, FP16: what the trainer's head
gives); old logprobs in ``old dtype`` (FP32, the packed tensors', or the new logprobs' dtype)
equal to the new ones plus a small drift, except token ``at`` of row 0, which holds a bad value:
a non-finite ``old``, or a finite one whose log-ratio ``new - old`` is beyond ART's bound (20, 10 in
FP16), from just past it to the dtype's largest. ``grad`` says whether the logits require grad
(a backward is then run and its gradients read). Advantages are FP32, one per row. ``level`` is
``loss_fn``'s ``importance_sampling_level`` (every level ART 0.5.20-0.5.23 accepts: "token",
"sequence", "average", "geometric_average"; each row is one sequence, its own group id).

The predicates (the records' Expected):

- item 8: the loss and every gradient are finite, or ``loss_fn`` raises an error that names the
  old logprobs (``log prob``/``logprob`` in its message) on such an input; a step whose old
  logprobs are all ordinary must run and be finite (a function that always raises holds nothing);
- item 801 (PPO, A < 0): the loss is finite and within twice that of the same step with the
  sentinel token's old logprob replaced by its new one (every old logprob finite and ordinary),
  plus 8 ulps of the loss dtype, with finite gradients; or a clear error as above.

Nothing here imports ART: the caller passes its loss module (``loss_fn``, ``AlignedLossInputs``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import _domain
import torch

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
VOCAB = 16
CLEAR_ERROR = re.compile(r"log[ _-]?prob", re.IGNORECASE)
SANE_FACTOR = 2.0
NON_FINITE = {"-inf": float("-inf"), "nan": float("nan"), "+inf": float("inf")}
# loss_fn's importance_sampling_level values (art/loss.py 0.5.20-0.5.23; "token" the default)
LEVELS = ("token", "sequence", "average", "geometric_average")


def bound_for(new_dtype: str, old_dtype: str) -> float:
    """ART 0.5.21's log-ratio bound for the dtype of new - old (10 in FP16, else 20): the
    edge of "beyond the bound" the domain starts from (a check of behaviour, not of this)."""
    diff = torch.promote_types(DTYPES[new_dtype], DTYPES[old_dtype])
    return 10.0 if diff == torch.float16 else 20.0


def old_value(case: dict[str, Any], new: float) -> float:
    """The bad old logprob of a case: a non-finite ``old``, or ``new - d`` for a finite d
    (``new - old``), no lower than the dtype's largest negative value."""
    if "old" in case:
        return NON_FINITE[case["old"]]
    finfo = torch.finfo(DTYPES[case["old dtype"]])
    return max(new - float(case["new - old"]), -finfo.max)


def run_step(
    loss_fn: Callable[..., Any],
    inputs_type: Any,
    case: dict[str, Any],
    *,
    sentinel: bool = True,
    strict: bool = False,
) -> dict[str, Any]:
    """One step of ``case`` (``sentinel`` False: token ``at`` of row 0 gets old = new);
    ``strict``: an error is raised, not returned (the code itself is broken)."""
    rows, tokens, at = case["rows"], case["tokens"], case["at"]
    gen = torch.Generator().manual_seed(case["seed"])
    logits = torch.randn(rows, tokens, VOCAB, generator=gen, dtype=torch.float32)
    logits.requires_grad_(case["grad"])
    targets = torch.randint(0, VOCAB, (rows, tokens, 1), generator=gen)
    new_dtype, old_dtype = DTYPES[case["new dtype"]], DTYPES[case["old dtype"]]
    new = torch.log_softmax(logits, -1).gather(-1, targets).squeeze(-1).to(new_dtype)
    if case["grad"]:
        new.retain_grad()
    drift = 0.05 * torch.randn(rows, tokens, generator=gen)
    old = (new.detach().float() + drift).to(old_dtype)
    if sentinel:
        old[0, at] = old_value(case, float(new[0, at]))
    else:
        old[0, at] = new.detach()[0, at].to(old_dtype)
    advantages = torch.tensor(case["advantages"], dtype=torch.float32)[:, None].expand(-1, tokens)
    inputs = inputs_type(
        assistant_mask=torch.ones(rows, tokens, dtype=torch.bool),
        old_logprobs=old,
        advantages=advantages.contiguous(),
        weights=torch.ones(rows, tokens, dtype=torch.float32),
        group_ids=torch.arange(1, rows + 1)[:, None].expand(-1, tokens).contiguous(),
    )
    try:
        config = {"ppo": case["algo"] == "ppo", "importance_sampling_level": level(case)}
        loss = loss_fn(inputs, new, None, None, config).policy_loss
    except Exception as exc:  # judged by the caller: a clear error, or a failure
        if strict:
            raise
        return {"error": f"{type(exc).__name__}: {exc}"[:200]}
    out: dict[str, Any] = {"loss": float(loss.detach()), "dtype": loss.dtype}
    if case["grad"]:
        loss.backward()
        grads = [t.grad for t in (new, logits) if t.grad is not None]
        out["grads finite"] = all(bool(torch.isfinite(g).all()) for g in grads)
    else:
        out["grads finite"] = True
    return out


def level(case: dict[str, Any]) -> str:
    """The case's importance-sampling level ("token" when it names none)."""
    return str(case.get("level", "token"))


def _error(step: dict[str, Any]) -> _domain.Failure | None:
    """None when the step raised a clear error (it names the old logprobs)."""
    if CLEAR_ERROR.search(step["error"]):
        return None
    return _domain.Failure(f"raised {step['error'][:60]}", "a finite step or a clear error")


def _control(loss_fn: Callable[..., Any], inputs_type: Any, case: dict[str, Any]) -> Any:
    """The same step with every old logprob ordinary: it must run and be finite."""
    control = run_step(loss_fn, inputs_type, case, sentinel=False)
    if "error" in control:
        return _domain.Failure(f"ordinary step raised {control['error'][:60]}", "a finite step")
    if not (math.isfinite(control["loss"]) and control["grads finite"]):
        return _domain.Failure(f"ordinary step: loss {control['loss']!r}", "finite")
    return control


def finite_step(loss_fn: Callable[..., Any], inputs_type: Any, case: dict[str, Any]) -> Any:
    """Item 8's predicate on one case: a Failure, or None when it holds."""
    step = run_step(loss_fn, inputs_type, case)
    if "error" in step:
        failed = _error(step)
        if failed is not None:
            return failed
        control = _control(loss_fn, inputs_type, case)
        return control if isinstance(control, _domain.Failure) else None
    if not math.isfinite(step["loss"]):
        return _domain.Failure(f"loss {step['loss']!r}", "finite")
    if not step["grads finite"]:
        return _domain.Failure("gradients not finite", "finite")
    return None


def sane_step(loss_fn: Callable[..., Any], inputs_type: Any, case: dict[str, Any]) -> Any:
    """Item 801's predicate on one case: a Failure, or None when it holds."""
    control = _control(loss_fn, inputs_type, case)
    if isinstance(control, _domain.Failure):
        return control
    step = run_step(loss_fn, inputs_type, case)
    if "error" in step:
        return _error(step)
    if not (math.isfinite(step["loss"]) and step["grads finite"]):
        return _domain.Failure(
            f"loss {step['loss']!r}, gradients finite: {step['grads finite']}", "finite"
        )
    ulp = _domain.ulps(step["dtype"])
    bound = SANE_FACTOR * abs(control["loss"]) * (1 + 8 * ulp)
    if abs(step["loss"]) > bound:
        return _domain.Failure(float(f"{step['loss']:.6g}"), float(f"{bound:.6g}"))
    return None


def draw(
    rng: Any, *, algos: tuple[str, ...], bad: tuple[str, ...], negative: bool
) -> dict[str, Any]:
    """One case from the domain (``bad``: the kinds of old logprob, "beyond" for finite)."""
    rows = rng.choice((1, rng.randint(1, 8)))
    tokens = rng.choice((1, rng.randint(1, 16)))
    new_dtype = rng.choice(tuple(DTYPES))
    old_dtype = rng.choice(("fp32", new_dtype))
    kind = rng.choice(bad)
    if kind == "beyond":
        edge = bound_for(new_dtype, old_dtype)
        finfo_max = torch.finfo(DTYPES[old_dtype]).max
        d = rng.choice(
            (
                edge + 10 ** rng.uniform(-1, 1),
                10 ** rng.uniform(math.log10(edge + 1), math.log10(finfo_max)),
                rng.choice((9999.0 + rng.random(), 1e4, 1e9, 1e30, finfo_max)),
            )
        )
        d = min(float(f"{d:.4g}"), finfo_max)
        if d <= edge:
            d = float(f"{edge * 1.05:.4g}")
        bad_old: dict[str, Any] = {"new - old": d}
    else:
        bad_old = {"old": kind}
    sign = -1.0 if negative else rng.choice((-1.0, 1.0))
    return {
        "algo": rng.choice(algos),
        "level": rng.choice(LEVELS),
        "new dtype": new_dtype,
        "old dtype": old_dtype,
        **bad_old,
        "rows": rows,
        "tokens": tokens,
        "at": rng.randrange(tokens),
        "advantages": [sign * 10 ** rng.uniform(-3, 3) for _ in range(rows)],
        "grad": rng.random() < 0.75,
        "seed": rng.randrange(1000),
    }


def shrink(case: dict[str, Any]) -> list[dict[str, Any]]:
    """Fewer rows and tokens, FP32, no grad, round advantages and old logprobs."""
    out = []
    for rows in _domain.toward_int(case["rows"], 1):
        smaller = _domain.replace(case, "rows", rows)
        out.append(_domain.replace(smaller, "advantages", case["advantages"][:rows]))
    for tokens in _domain.toward_int(case["tokens"], 1):
        smaller = _domain.replace(case, "tokens", tokens)
        out.append(_domain.replace(smaller, "at", min(case["at"], tokens - 1)))
    if case["at"]:
        out.append(_domain.replace(case, "at", 0))
    if level(case) != "token":
        out.append(_domain.replace(case, "level", "token"))
    simple = [math.copysign(1.0, a) for a in case["advantages"]]
    if simple != case["advantages"]:
        out.append(_domain.replace(case, "advantages", simple))
    if "new - old" in case:
        edge = bound_for(case["new dtype"], case["old dtype"])
        for value in (1e4, 100.0, float(math.ceil(edge + 1))):
            if edge < value < case["new - old"]:
                out.append(_domain.replace(case, "new - old", value))
    stays_beyond = case.get("new - old", math.inf) > 20.0
    for key in ("new dtype", "old dtype"):
        if case[key] != "fp32" and stays_beyond:
            out.append(_domain.replace(case, key, "fp32"))
    return out


def search(
    loss: Any,
    predicate: Callable[[Callable[..., Any], Any, dict[str, Any]], Any],
    *,
    covers: str,
    edges: list[dict[str, Any]],
    algos: tuple[str, ...],
    bad: tuple[str, ...],
    negative: bool,
) -> _domain.Found:
    """``predicate`` (:func:`finite_step`, :func:`sane_step`) on ART's loss module ``loss``. A
    step with every old logprob ordinary runs first, outside the search: if it raises, the code
    is broken, and its error (with ART's file and line) is the result, not a counterexample."""
    run_step(loss.loss_fn, loss.AlignedLossInputs, edge(21.0), sentinel=False, strict=True)
    return _domain.search(
        covers=covers,
        edges=edges,
        sample=lambda rng: draw(rng, algos=algos, bad=bad, negative=negative),
        holds=lambda case: predicate(loss.loss_fn, loss.AlignedLossInputs, case),
        shrink=shrink,
    )


def edge(old: str | float, **over: Any) -> dict[str, Any]:
    """The records' own step: one row of four FP32 tokens, PPO, A = -1, grad on, token 1, token
    level; ``old`` a non-finite label or the finite distance new - old."""
    bad_old = {"old": old} if isinstance(old, str) else {"new - old": old}
    case: dict[str, Any] = {
        "algo": "ppo",
        "level": "token",
        "new dtype": "fp32",
        "old dtype": "fp32",
        **bad_old,
        "rows": 1,
        "tokens": 4,
        "at": 1,
        "advantages": [-1.0],
        "grad": True,
        "seed": 0,
    }
    case.update(over)
    case["at"] = min(case["at"], case["tokens"] - 1)
    return case
