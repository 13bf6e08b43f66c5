"""Item 6's claims as artbot judges them (issue #53): each claim's inputs and its judge, ART-free.

``repros/item06_adam_eps.py`` measures each input through ART's ``TrainerRank.optim_step`` in the
check's process (``_art_optimizer``) and returns numbers; the judges here decide, there and again
in artbot's own process on the taped ``(case, raw)`` pairs. One contract for both claims (issue
#51), the audit's: "add eps to AdamParams and the cross-rank config guard", so that TrainerRank
can take the Megatron backend's step.

- eps-not-configurable, one input: an eps a user sets (``eps``, and ``eps_other`` at the other
  end of the range), the other fields of AdamParams as given (None: the default); ``raw`` is,
  per field of AdamParams but the learning rate, the eps each parameter's first step used with
  the field set to ``eps`` and, afresh, to ``eps_other`` (None: a value refused), a later step's
  after the field changed from one to the other (reported, not judged: ART reuses a slot's
  optimizer), and whether the cross-rank guard refused two ranks holding the two. Fixed on it
  when some field's value is the eps every parameter's step used at both values (within 1%),
  on the LoRA pair on one rank and on the case's slot (``tensors``, 2-1,024: a Qwen3-4B LoRA's
  504) on its ranks (``world_size``, 1-8), and the guard refuses ranks that differ only in
  that field.
- eps-damps-tiny-updates, one input: a seed and a token count of the LoRA model, and the eps
  asked through a field (``asked_eps``, Megatron's 1e-13); ``raw`` is the smallest eps a step
  can be given and how, the step A first moves on, its median |update| / lr, the median |grad A|
  after ART's clip, and the betas. Fixed on it when that update is not more than 10% smaller
  than the update eps 1e-13 gives to that gradient, computed here from the betas.
"""

from __future__ import annotations

import math
import random
from typing import Any

import _domain

EPS_MEGATRON = 1e-13  # art/megatron/train.py's OptimizerConfig adam_eps
TOKENS = 256  # tokens of the LoRA model's step (item06_adam_eps.py)

CONFIG, DAMP = "eps-not-configurable", "eps-damps-tiny-updates"
# The eps a user sets (Megatron's 1e-13 among them), never near torch's 1e-8, which every step
# uses unasked; the rank-1 eps of the guard's and the later step's input is the other end.
CONFIG_DIMENSIONS: dict[str, tuple[Any, ...]] = {  # None: AdamParams' default
    "eps": (1e-16, 1e-13, 1e-6),  # the draws cover the range between
    "learning_rate": (None, 1e-6, 1e-4),  # None: ART's default 5e-6 (art/types.py)
    "beta1": (None, 0.8, 0.95),
    "beta2": (None, 0.95, 0.999),
    "weight_decay": (None, 0.0, 0.01),
    "grad_clip_norm": (None, 0.0, 1.0),  # 0: ART's clip off
    "rest": (None, 0.5),  # any other float field of AdamParams: its default times this
    # The slot's parameter tensors and the ranks (issue #53, the review's fakes gated past the
    # old domain's 2 tensors and 2 ranks): a Qwen3-4B LoRA has 504 (36 layers x 7 modules x A,
    # B), a Qwen3-32B one 896; 1 rank (no torch.distributed) to a node's 8.
    "tensors": (2, 504, 896),
    "world_size": (1, 2, 8),
}
MOST_TENSORS, MOST_RANKS = 1024, 8
CONFIG_COVERS = (
    "every field of AdamParams but the learning rate, set in turn to eps 1e-16-1e-5 (never "
    "near 1e-8), a covering array of eps x learning rate 1e-6-1e-4 x beta1 x beta2 x weight "
    "decay 0-0.01 x clip norm 0 (off)-1.0 x any other float field at 0.5x its default x "
    "2-1,024 parameter tensors a slot (a Qwen3-4B LoRA's 504) x 1-8 ranks, then draws; each "
    "through TrainerRank.optim_step: the eps a first step used, a later step's after the field "
    "changed; the cross-rank guard on two ranks differing in eps only"
)
DAMP_COVERS = (
    "the smallest eps a step of ART's optimizer can be given (AdamParams' defaults, or a field "
    "set to Megatron's 1e-13), a rank-8 LoRA on 2560 x 2560 from PEFT's init stepped through "
    "TrainerRank.optim_step, its clip over ART's Qwen3-4B LoRA parameters; 256-1024 tokens"
)


def _other_eps(eps: float) -> float:
    return 1e-6 if eps < 1e-9 else 1e-13


def config_edges() -> list[dict[str, Any]]:
    """The audit's case (eps 1e-13, every other field at its default), then a covering array."""
    cases: list[dict[str, Any]] = [
        {"eps": 1e-13, **dict.fromkeys(list(CONFIG_DIMENSIONS)[1:]), "tensors": 2, "world_size": 1}
    ]
    cases += _domain.pairwise_cases(CONFIG_DIMENSIONS)
    return [{**c, "eps_other": _other_eps(c["eps"])} for c in cases]


def config_sample(rng: random.Random) -> dict[str, Any]:
    eps = 10 ** rng.uniform(-16, -5)
    eps = eps / 100 if 10**-8.5 < eps < 10**-7.5 else eps
    case = {
        "eps": eps,
        "learning_rate": 10 ** rng.uniform(-7, -3),
        "beta1": rng.choice([None, rng.uniform(0.5, 0.99)]),
        "beta2": rng.choice([None, rng.uniform(0.9, 0.9999)]),
        "weight_decay": rng.choice([None, 0.0, rng.uniform(0.0, 0.2)]),
        "grad_clip_norm": rng.choice([None, 0.0, 10 ** rng.uniform(-2, 1)]),
        "rest": rng.choice([None, rng.uniform(0.5, 0.95)]),
        "tensors": rng.choice([2, 504, rng.randint(2, MOST_TENSORS)]),
        "world_size": rng.randint(1, MOST_RANKS),
    }
    return {**case, "eps_other": _other_eps(eps)}


def config_shrink(case: dict[str, Any]) -> list[dict[str, Any]]:
    """Toward the audit's case: eps 1e-13, then each other field back to its default (the slot
    to its LoRA pair, one rank)."""
    out = [] if case["eps"] == 1e-13 else [{**case, "eps": 1e-13, "eps_other": 1e-6}]
    smallest = {"tensors": 2, "world_size": 1}
    others = [
        k for k in CONFIG_DIMENSIONS if k not in ("eps", *smallest) and case.get(k) is not None
    ]
    out += [_domain.replace(case, k, None) for k in others]
    return out + [_domain.replace(case, k, v) for k, v in smallest.items() if case.get(k, v) != v]


def _keys(case: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The raw's first steps a field must set the eps of, and the case's eps each must use:
    the LoRA pair's on one rank, and the case's slot on its ranks where those differ."""
    keys: tuple[tuple[str, str], ...] = (("first", "eps"), ("first_other", "eps_other"))
    if int(case.get("tensors") or 2) != 2 or int(case.get("world_size") or 1) != 1:
        keys += (("layout", "eps"), ("layout_other", "eps_other"))
    return keys


def reaching(case: dict[str, Any], raw: dict[str, Any]) -> list[str]:
    """The fields whose value is the eps every parameter's first step used, set to the case's
    ``eps`` and to its ``eps_other`` (one value could be the default's by chance), on the LoRA
    pair and on the case's slot and ranks."""
    return [
        name
        for name, got in raw["fields"].items()
        if got
        and all(
            got.get(key) and all(_close(e, case[want]) for e in got[key])
            for key, want in _keys(case)
        )
    ]


def judge_config(case: dict[str, Any], raw: dict[str, Any]) -> _domain.Failure | None:
    """Fixed on ``case`` when some field of AdamParams set to its eps is the eps a step uses
    and the cross-rank guard refuses two ranks that differ only in that field."""
    found = reaching(case, raw)
    if not found:
        name, value, got = nearest(case, raw)
        return _domain.Failure(f"{name}: step eps {eps_text(got or [])}", f"eps {value:g}")
    if not any(raw["fields"][name]["guard"] for name in found):
        return _domain.Failure(
            f"the cross-rank guard passes two ranks differing only in {found[0]}",
            "the guard refuses them",
        )
    return None


def nearest(case: dict[str, Any], raw: dict[str, Any]) -> tuple[str, float, list[float] | None]:
    """The field named like eps (else "any of" them all), the value it was set to that missed,
    and the step eps it gave (None: the value was refused)."""
    fields = raw["fields"]
    named = [n for n in fields if "eps" in n.lower()]
    name = named[0] if named else f"any of {', '.join(fields)}"
    got = fields[named[0]] if named else next((g for g in fields.values() if g), None)
    if not got:
        return name, case["eps"], None
    for key, want in _keys(case):
        if not (got.get(key) and all(_close(e, case[want]) for e in got[key])):
            return name, case[want], got.get(key)
    return name, case["eps"], got["first"]


def damp_edges() -> list[dict[str, Any]]:
    return [{"asked_eps": EPS_MEGATRON, "seed": 0, "tokens": TOKENS}]


def damp_sample(rng: random.Random) -> dict[str, Any]:
    return {
        "asked_eps": EPS_MEGATRON,
        "seed": rng.randrange(1000),
        "tokens": rng.choice([256, 1024]),
    }


def megatron_update(beta1: float, beta2: float, step: int, grad: float) -> float:
    """|Adam's update| / lr with Megatron's eps 1e-13 for a gradient element of size ``grad``
    first nonzero on step t: the bias-corrected moments m = (1 - b1) g / (1 - b1**t) over
    sqrt(v) = |g| sqrt((1 - b2) / (1 - b2**t)), plus eps."""
    root = grad * math.sqrt((1 - beta2) / (1 - beta2**step))
    return (1 - beta1) / (1 - beta1**step) * grad / (root + EPS_MEGATRON)


def damping(raw: dict[str, Any]) -> float:
    """A's first update at the median |grad A| after the clip over ART's Qwen3-4B LoRA
    parameters, as a fraction of the update eps 1e-13 gives to that gradient (the median
    update is the median gradient's: the update grows with |g|)."""
    beta1, beta2 = raw["betas"]
    return raw["update_a_over_lr"] / megatron_update(
        beta1, beta2, raw["step"], raw["grad_a_median"]
    )


def judge_damping(case: dict[str, Any], raw: dict[str, Any]) -> _domain.Failure | None:
    """Damped: A's first update is more than 10% smaller than the update eps 1e-13 gives."""
    if raw.get("eps") is None:
        return None  # no eps can be given to a step: not checked (check_art says so)
    if raw.get("step") is None:
        return _domain.Failure("A did not move", "A's first update")
    ratio = damping(raw)
    return _domain.Failure(round(ratio, 4), 0.9) if ratio < 0.9 else None


ORACLES = {
    CONFIG: _domain.Oracle(judge=judge_config, edges=config_edges, sample=config_sample, draws=4),
    DAMP: _domain.Oracle(judge=judge_damping, edges=damp_edges, sample=damp_sample, draws=2),
}


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=0.01)


def eps_text(values: list[float]) -> str:
    return ", ".join(sorted({f"{v:.2g}" for v in values}))
