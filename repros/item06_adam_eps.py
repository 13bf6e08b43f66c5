"""Item 6: TrainerRank's Adam epsilon is PyTorch's 1e-8; the Megatron backend uses 1e-13.

Models the optimizer step of ART's TrainerRank as released in openpipe-art 0.5.20:
``art/trainer_rank/_impl.py`` lines 3266-3271 build ``torch.optim.AdamW(masters, lr, betas,
weight_decay)`` over FP32 master copies with no ``eps`` (``AdamParams``, lines 94-99, has none), so
eps = 1e-8; lines 3167-3181 clip with ``min(1, grad_clip_norm / (grad_norm + 1e-6))`` before the
step. The Megatron backend's default ``OptimizerConfig`` (``art/megatron/train.py`` lines 274-283)
has the same lr 5e-6, betas (0.9, 0.99), clip 0.1 and weight decay 0.1, and adam_eps = 1e-13.
(The audit cites trainer_rank/_optimizer.py#L423-L428 and _impl.py#L120-L126 at e2a406a48, a
commit in no release, between 0.5.20 and 0.5.21; 0.5.20 has no _optimizer.py, and the same code
sits at the lines above.)

What is measured, with the real ``torch.optim.AdamW``:
1. The first step of one element for gradient magnitudes 1e-6 ... 1e-10, eps 1e-8 against 1e-13.
   The arithmetic: step = lr * g / (|g| + eps) (bias corrections cancel on the first step).
2. A LoRA layer's first updates: B starts at 0, so A's gradient is exactly 0 on step 1 and A does
   not move; B moves by about lr. From step 2 on A's gradient is proportional to B (about lr), and
   after tight global clipping its elements are about 1e-8, next to eps. Measured: A's Adam update
   per step under eps 1e-8 (TrainerRank) and 1e-13 (Megatron), and their elementwise ratio.
With the suggested fix (eps configurable in AdamParams, set to Megatron's 1e-13) the two backends
take the same step; that comparison is reported as "fixed".

Assumptions:
- A rank-8 LoRA (alpha 16, scale 2) on a 2560 x 2560 projection (Qwen3-4B's hidden size), PEFT's
  init (A uniform in +-1/sqrt(d_in), B = 0), 256 tokens per step with N(0, 1) activations and
  N(0, 1e-6) upstream gradients, in FP32.
- The global gradient norm that the clip uses covers every LoRA parameter of Qwen3-4B's target
  modules (``LORA_PARAMETERS``, derived below: 36 layers x q/k/v/o/gate/up/down, rank 8, hidden
  2560, intermediate 9728, 32 query heads and 8 key/value heads of 128). Each parameter is
  modelled as having a gradient of the same RMS as this module's, i.e. global norm =
  sqrt(LORA_PARAMETERS / this module's parameters) * this module's norm. With clipping active
  the upstream gradient scale cancels, and the per-element gradient size is set by the clip
  norm and the parameter count: about 0.1 / sqrt(16.5M) = 2.5e-5 RMS, less for A than for B.

Verdict: gradient elements at or below eps (|g| <~ eps) get damped updates. It holds when A's
first update has a median |grad A| within 10x of eps 1e-8 and that update is damped by more
than 10% against eps 1e-13; with the fix (eps 1e-13 on both sides) there is no damping.
- Megatron's fused Adam is taken to compute the same AdamW update as torch's (eps added to
  sqrt(v_hat)); only eps differs between the two runs.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _art_optimizer  # noqa: E402
import _common  # noqa: E402
import _evidence  # noqa: E402

LR, BETAS, WEIGHT_DECAY, CLIP_NORM = 5e-6, (0.9, 0.99), 0.1, 0.1
EPS_TRAINER_RANK, EPS_MEGATRON = 1e-8, 1e-13
GRAD_MAGNITUDES = (1e-6, 1e-7, 1e-8, 1e-9, 1e-10)
D_MODEL, RANK, LORA_SCALE, TOKENS, STEPS = 2560, 8, 2.0, 256, 4

# Qwen3-4B (config.json): 36 layers, hidden 2560, intermediate 9728, 32 query heads and 8
# key/value heads of head_dim 128. A rank-r LoRA on an (in -> out) projection has r * (in + out)
# parameters.
QWEN3_4B_LAYERS, QWEN3_4B_INTERMEDIATE, HEAD_DIM, Q_HEADS, KV_HEADS = 36, 9728, 128, 32, 8
TARGET_MODULES = {  # name: (in_features, out_features)
    "q_proj": (D_MODEL, Q_HEADS * HEAD_DIM),
    "k_proj": (D_MODEL, KV_HEADS * HEAD_DIM),
    "v_proj": (D_MODEL, KV_HEADS * HEAD_DIM),
    "o_proj": (Q_HEADS * HEAD_DIM, D_MODEL),
    "gate_proj": (D_MODEL, QWEN3_4B_INTERMEDIATE),
    "up_proj": (D_MODEL, QWEN3_4B_INTERMEDIATE),
    "down_proj": (QWEN3_4B_INTERMEDIATE, D_MODEL),
}


def lora_parameters(modules: tuple[str, ...] | list[str] = tuple(TARGET_MODULES)) -> int:
    """Rank-8 LoRA parameters of Qwen3-4B on ``modules`` (names from ART's target-module list;
    shapes from Qwen3-4B's config). A name whose shape is not known here is an error."""
    unknown = [m for m in modules if m not in TARGET_MODULES]
    if unknown:
        raise ValueError(f"no Qwen3-4B shape for LoRA target modules {unknown}")
    return QWEN3_4B_LAYERS * RANK * sum(sum(TARGET_MODULES[m]) for m in modules)


PER_LAYER_IN_PLUS_OUT = sum(i + o for i, o in TARGET_MODULES.values())  # 57,344
LORA_PARAMETERS = lora_parameters()  # 36 * 8 * 57,344 = 16,515,072
MODULE_PARAMETERS = RANK * (D_MODEL + D_MODEL)  # the one module trained here: 40,960


def adamw(params: list[torch.Tensor], eps: float) -> torch.optim.AdamW:
    """TrainerRank's optimizer (_impl.py#L3266-L3271), with ``eps`` made explicit."""
    return torch.optim.AdamW(params, lr=LR, betas=BETAS, weight_decay=WEIGHT_DECAY, eps=eps)


def first_step(eps: float, grads: tuple[float, ...] = GRAD_MAGNITUDES) -> list[float]:
    """One AdamW step from 0 with gradient ``g`` per element; returns |step| / lr per element."""
    param = torch.nn.Parameter(torch.zeros(len(grads), dtype=torch.float32))
    opt = adamw([param], eps)
    param.grad = torch.tensor(grads, dtype=torch.float32)
    opt.step()
    # The parameter starts at 0, so weight decay adds nothing and the change is Adam's step.
    return (param.detach().abs() / LR).tolist()


def lora_run(
    eps: float, *, steps: int = STEPS, seed: int = 0, lora_parameters: int | None = None
) -> list[dict[str, Any]]:
    """Train one LoRA pair from PEFT's init with global clipping; A's and B's updates per step."""
    gen = torch.Generator().manual_seed(seed)
    bound = 1.0 / math.sqrt(D_MODEL)
    lora_a = torch.nn.Parameter((torch.rand(D_MODEL, RANK, generator=gen) * 2 - 1) * bound)
    lora_b = torch.nn.Parameter(torch.zeros(RANK, D_MODEL))
    opt = adamw([lora_a, lora_b], eps)
    out = []
    for step in range(1, steps + 1):
        x = torch.randn(TOKENS, D_MODEL, generator=gen)
        grad_y = torch.randn(TOKENS, D_MODEL, generator=gen) * 1e-3
        (LORA_SCALE * (x @ lora_a) @ lora_b * grad_y).sum().backward()
        layer_norm = math.sqrt(float(lora_a.grad.square().sum() + lora_b.grad.square().sum()))
        total = LORA_PARAMETERS if lora_parameters is None else lora_parameters
        grad_norm = math.sqrt(total / MODULE_PARAMETERS) * layer_norm
        clip = min(1.0, CLIP_NORM / (grad_norm + 1.0e-6))  # _impl.py#L3169-L3175
        for p in (lora_a, lora_b):
            p.grad.mul_(clip)
        a_before, b_before = lora_a.detach().clone(), lora_b.detach().clone()
        grad_a = lora_a.grad.detach().clone()
        opt.step()
        opt.zero_grad(set_to_none=True)
        # AdamW decays first (p *= 1 - lr * wd), then adds the Adam step; undo the decay.
        decay = 1 - LR * WEIGHT_DECAY
        out.append(
            {
                "step": step,
                "clip": clip,
                "grad_a": grad_a,
                "update_a": lora_a.detach() - a_before * decay,
                "update_b": lora_b.detach() - b_before * decay,
            }
        )
    return out


def compare_lora(
    slow_eps: float, reference_eps: float, *, lora_parameters: int | None = None
) -> list[dict[str, Any]]:
    """Per step: A's update under ``slow_eps`` against ``reference_eps`` (elementwise ratio)."""
    slow = lora_run(slow_eps, lora_parameters=lora_parameters)
    reference = lora_run(reference_eps, lora_parameters=lora_parameters)
    rows = []
    for s, r in zip(slow, reference, strict=True):
        moving = r["update_a"] != 0
        ratio = (s["update_a"][moving] / r["update_a"][moving]).abs()
        rows.append(
            {
                "step": s["step"],
                "clip_factor": s["clip"],
                "grad_a_median": float(r["grad_a"].abs().median()),
                "update_a_over_lr": float(s["update_a"].abs().median()) / LR,
                "update_a_over_lr_reference": float(r["update_a"].abs().median()) / LR,
                "update_b_over_lr": float(s["update_b"].abs().median()) / LR,
                # None while A has not moved yet (step 1: its gradient is exactly 0).
                "update_ratio_median": float(ratio.median()) if ratio.numel() else None,
            }
        )
    return rows


def measure() -> dict[str, Any]:
    """First-step sizes per eps; the LoRA run as cited (1e-8 vs 1e-13) and fixed (both 1e-13)."""
    return {
        "grad_magnitudes": list(GRAD_MAGNITUDES),
        "first_step": {str(eps): first_step(eps) for eps in (EPS_TRAINER_RANK, EPS_MEGATRON)},
        "lora": compare_lora(EPS_TRAINER_RANK, EPS_MEGATRON),
        "lora_fixed": compare_lora(EPS_MEGATRON, EPS_MEGATRON),
    }


def first_a_update(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The first step in which A moves (step 2: on step 1 its gradient is exactly 0)."""
    return next(r for r in rows if r["update_a_over_lr_reference"] > 0)


def is_reproduced(rows: list[dict[str, Any]]) -> bool:
    """|g| <~ eps gets a damped update: A's first gradient is within 10x of eps 1e-8 (median)
    and its update is more than 10% smaller than with eps 1e-13."""
    first = first_a_update(rows)
    return first["grad_a_median"] < 10 * EPS_TRAINER_RANK and first["update_ratio_median"] < 0.9


def build_report() -> _common.Report:
    """Item 6: Adam eps 1e-8 (TrainerRank) against 1e-13 (Megatron)."""
    _common.seed_everything(0)
    m = measure()
    report = _common.Report(
        item="6",
        title="TrainerRank's Adam epsilon isn't configurable and differs from the Megatron backend",
        models="art/trainer_rank/_impl.py AdamW + clip (0.5.20 lines 3167-3181, 3266-3271; audit: "
        "trainer_rank/_optimizer.py#L423-L428) against art/megatron/train.py#L274-L283",
        setting={
            "optimizer": f"torch.optim.AdamW lr={LR:g} betas={BETAS} weight_decay={WEIGHT_DECAY}",
            "eps": f"TrainerRank {EPS_TRAINER_RANK:g} (torch default), Megatron {EPS_MEGATRON:g}",
            "clip": f"min(1, {CLIP_NORM} / (global norm + 1e-6))",
            "LoRA": f"rank {RANK}, scale {LORA_SCALE:g}, {D_MODEL}x{D_MODEL}, {TOKENS} tokens",
            "LoRA parameters in the global norm (Qwen3-4B, q/k/v/o/gate/up/down)": (
                f"{QWEN3_4B_LAYERS} layers x rank {RANK} x "
                + " + ".join(f"({i} + {o})" for i, o in TARGET_MODULES.values())
                + f" = {QWEN3_4B_LAYERS} x {RANK} x {PER_LAYER_IN_PLUS_OUT} = {LORA_PARAMETERS}"
            ),
            "global norm": f"sqrt({LORA_PARAMETERS} / {MODULE_PARAMETERS}) x this module's norm",
        },
    )
    report.measure(
        "first step / lr, eps 1e-8, g = " + ", ".join(f"{g:g}" for g in GRAD_MAGNITUDES),
        m["first_step"][str(EPS_TRAINER_RANK)],
        fixed=m["first_step"][str(EPS_MEGATRON)],
        note="arithmetic: g / (|g| + eps); fixed = eps 1e-13",
    )
    for row, fixed_row in zip(m["lora"], m["lora_fixed"], strict=True):
        step = row["step"]
        report.measure(f"step {step}: global clip factor", row["clip_factor"])
        report.measure(f"step {step}: median |grad A| after clip", row["grad_a_median"])
        report.measure(
            f"step {step}: median |update A| / lr, TrainerRank (eps 1e-8)",
            row["update_a_over_lr"],
            fixed=fixed_row["update_a_over_lr"],
            note=f"Megatron (eps 1e-13): {row['update_a_over_lr_reference']:.3g}",
        )
        if row["update_ratio_median"] is not None:
            report.measure(
                f"step {step}: median |update A| ratio TrainerRank / Megatron",
                row["update_ratio_median"],
                fixed=fixed_row["update_ratio_median"],
            )
        report.measure(f"step {step}: median |update B| / lr, TrainerRank", row["update_b_over_lr"])
    first = first_a_update(m["lora"])
    report.note(
        f"A first moves at step {first['step']}; its median update there is "
        f"{first['update_ratio_median']:.3g} of Megatron's, with |grad A| about "
        f"{first['grad_a_median']:.2g} against eps {EPS_TRAINER_RANK:g}: |g| <~ eps, damped."
    )
    report.note(
        "The first-step table is the rule itself: g / (|g| + eps) is 1/2 at |g| = eps, 0.91 at "
        "10 eps, and near 1 only well above eps. Larger models (more LoRA parameters under the "
        "same clip) have smaller per-element gradients and more damping; fewer, less."
    )
    report.reproduced = is_reproduced(m["lora"])
    report.claim(
        "eps-not-configurable",
        None,
        "ART's AdamParams is read by `artbot verify`, this script models the optimizer only",
    )
    report.claim("eps-damps-tiny-updates", is_reproduced(m["lora"]))
    return report


def damped(eps: float, parameters: int = LORA_PARAMETERS) -> dict[str, Any]:
    """A's first update under ``eps`` against Megatron's 1e-13 (the damping claim's measure)."""
    first = first_a_update(compare_lora(eps, EPS_MEGATRON, lora_parameters=parameters))
    return {
        "eps": eps,
        "grad_a_median": first["grad_a_median"],
        "ratio": first["update_ratio_median"],
        # Damped: more than 10% smaller than with eps 1e-13.
        "damped": first["update_ratio_median"] < 0.9,
    }


def check_art(art: Any) -> dict[str, Any]:
    """Build TrainerRank's optimizer through ART's own code from ``AdamParams``
    (``_art_optimizer``: ``_dynamic_optimizer`` -> ``_new_dynamic_optimizer`` -> ``AdamW``,
    compiled from the release and run on CPU) and read the eps of every param group: by
    default, and with each of ``_art_optimizer.TRIED_EPS`` set in AdamParams; run the
    cross-rank guard on two configs that differ only in eps. Then run this script's LoRA
    measurement with the default eps, and the global clip norm over the LoRA parameters of
    ART's own default target modules for Qwen/Qwen3-4B (``megatron/model_support/registry.py``).

    One contract for both claims (issue #51), the audit's: "add eps to AdamParams and the
    cross-rank config guard", so that TrainerRank can take the Megatron backend's step. The eps
    is read from a real step of the optimizer ART builds (``_art_optimizer.step_eps``), never
    from ``param_groups``.

    eps-not-configurable: fixed when some field of AdamParams, whatever it is called
    (``eps``, ``adam_eps``, ...), reaches the step: set to each eps tried, with the other
    fields at their defaults and at non-default values, every master's step uses that eps
    (a field with no default counts: each caller sets it), and the cross-rank guard tells two
    ranks apart that differ only in it; a later step's eps is reported beside it.
    eps-damps-tiny-updates: measured with the smallest eps a step can be given, by default or
    through the field found (Megatron's 1e-13 when one reaches the step): fixed when that step
    is not damped. The audit asks for a configurable eps, not a new default, so the audit's fix
    with the default left at 1e-8 fixes both claims; an eps hard-coded to 1e-13 fixes only this
    one. Not checked when AdamParams' eps has no default and no field reaches the step."""
    began = time.perf_counter()
    measured = _art_optimizer.measure(art)
    measured["seconds"] = time.perf_counter() - began
    where = measured["where"]
    builder = where["_new_dynamic_optimizer"]
    default = measured["default"]
    guard_at = where["_guard_optim_step_configuration"]
    if "no_field" in measured:
        configurable = False
        config = (
            f"ran {builder}: {measured['no_field']} ({measured['params_at']})"
            + _missed(measured.get("closest"))
            + "; a step of the optimizer ART builds from AdamParams' defaults uses eps "
            f"{_eps(default)}; the cross-rank guard ({guard_at}) not run: no configured eps "
            "reaches the step"
        )
    else:
        got = measured["set"]
        # The audit's fix is "add eps to AdamParams and the cross-rank config guard" (and the
        # finding's Expected asks the same): an eps two ranks may hold differently without
        # the guard noticing is not yet the configurable eps the audit asks for.
        configurable = bool(measured["guard"])
        config = (
            f"ran {builder}: AdamParams.{measured['field']} ({measured['params_at']}) "
            + ", ".join(f"{want:g} -> step eps {_eps(eps)}" for want, eps in got.items())
            + f" (and under {measured['settings'] - 1} settings of every other field at "
            "non-default values)"
            + f"; a later step with {measured['field']} {_art_optimizer.TRIED_EPS[1]:g} leaves "
            f"{_eps(measured['later'])}; the cross-rank guard ({guard_at}) "
            + (
                "tells two ranks apart that differ only in it"
                if measured["guard"]
                else "does not compare it: two ranks that differ only in it pass (the audit's "
                "fix adds eps to AdamParams and the cross-rank config guard)"
            )
        )
    domain = _eps_domain(measured)
    modules = _art_optimizer.target_modules(art, "Qwen/Qwen3-4B")
    parameters = lora_parameters(modules)
    smallest, how = smallest_step_eps(measured)
    if smallest is None:
        damp_hit: bool | None = None
        damp = (
            f"AdamParams' eps has no default ({measured['params_at']}) and no field reaches "
            "the step: not checked"
        )
    else:
        result = damped(smallest, parameters)
        damp_hit = result["damped"]
        damp = (
            f"the smallest eps a step can be given: {smallest:g} ({how}; ran: a step of the "
            f"optimizer ART builds); modelled: A's first update is {result['ratio']:.3g} of eps "
            f"1e-13's at median |grad A| {result['grad_a_median']:.2g}, with the clip over "
            f"{parameters:,} LoRA parameters (ART's target modules for Qwen/Qwen3-4B: "
            f"{', '.join(modules)})"
        )
    at = _optimizer_lines(art, where)
    return {
        "claims": {
            "eps-not-configurable": _evidence.claim(
                not configurable, config, method="ran", at=at, domain=domain
            ),
            "eps-damps-tiny-updates": _evidence.claim(
                damp_hit, damp, method="modelled", at=at, domain=_damp_domain(measured, damp_hit)
            ),
        },
        "detail": f"{config}; {damp}",
        "ran": [
            *(f"{w} {name} (from the source, run)" for name, w in where.items()),
            f"{art.name}/megatron/model_support/registry.py:default_target_modules_for_model",
            "torch.optim.AdamW (this script's LoRA run with ART's default eps)",
        ],
        "scope": "ART's optimizer construction and cross-rank guard run on CPU (a stand-in "
        "TrainerRank with one slot, a stand-in two-rank torch.distributed); the damping "
        "measured with torch's AdamW on a modelled LoRA layer",
    }


def smallest_step_eps(measured: dict[str, Any]) -> tuple[float | None, str]:
    """The smallest eps a TrainerRank step can be given: the default's, or the smallest eps
    tried that the field found made the step use; and how it is had."""
    ways = {max(measured["default"]): "AdamParams' defaults"} if measured.get("default") else {}
    for want, got in (measured.get("set") or {}).items():
        if got and got == [want] * len(got):
            ways.setdefault(want, f"AdamParams.{measured['field']}={want:g}")
    if not ways:
        return None, ""
    smallest = min(ways)
    return smallest, ways[smallest]


def _eps_domain(measured: dict[str, Any]) -> dict[str, Any]:
    """What was searched for a configurable eps: every field of AdamParams but the learning
    rate, each set to every eps tried; the counterexample, when none reaches the optimizer, is
    the first field's (or the default's) eps against the value set."""
    tried = measured.get("by_field", {})
    inputs = sum(len(v) for v in tried.values()) + ("guard" in measured) or 1
    covers = (
        f"every field of AdamParams ({', '.join(measured.get('fields', []))}) but the learning "
        f"rate, set to eps {', '.join(f'{e:g}' for e in _art_optimizer.TRIED_EPS)} with the "
        f"other fields at their defaults and in {_art_optimizer.OTHER_SETTINGS} draws at "
        "non-default values (each, the learning rate too, 0.5-0.95 x its default); the "
        "eps each master's step used, solved from a real step; the cross-rank guard on two "
        "ranks differing in eps only"
    )
    counterexample = None
    if "no_field" in measured:
        near = measured.get("closest")
        if near is None:
            name, want, others, got = "(none settable)", _art_optimizer.TRIED_EPS[0], {}, None
        else:
            name, (want, others, got) = near
        counterexample = {
            "inputs": {"field": name, "set to": want, **_non_default(others)},
            "measured": "refused" if got is None else f"step eps {_eps(got)}",
            "bound": f"eps {want:g}",
        }
    elif not measured.get("guard"):
        first, second = _art_optimizer.TRIED_EPS
        counterexample = {
            "inputs": {"field": measured["field"], "rank 0": first, "rank 1": second},
            "measured": "the cross-rank guard passes",
            "bound": "the guard raises: the configs differ across ranks",
        }
    return {
        "covers": covers[:400],
        "inputs": inputs,
        "budget_s": 2.0,
        "seconds": round(measured["seconds"], 3),
        "seed": None,
        "counterexample": counterexample,
    }


def _damp_domain(measured: dict[str, Any], damped: bool | None) -> dict[str, Any]:
    """One input: the smallest eps a step of ART's optimizer can be given (by default or
    through the field found), measured on this script's LoRA layer against eps 1e-13 (the
    damping is a property of that one value)."""
    smallest, how = smallest_step_eps(measured)
    return {
        "covers": "the smallest eps a step of the optimizer ART builds can be given (AdamParams' "
        "defaults, or each eps tried through the field found); A's first update at the median "
        "|grad A| after the clip over ART's Qwen3-4B LoRA parameters",
        "inputs": 1,
        "budget_s": 2.0,
        "seconds": round(measured["seconds"], 3),
        "seed": None,
        "counterexample": {
            "inputs": {"eps": smallest, "given by": how},
            "measured": "A's first update damped",
            "bound": "the update eps 1e-13 gives",
        }
        if damped and smallest is not None
        else None,
    }


def _non_default(others: dict[str, Any]) -> dict[str, Any]:
    """The other fields' values of a try, rounded for a counterexample (none: all defaults)."""
    return {f"{k} (other field)": float(f"{v:.4g}") for k, v in sorted(others.items())}


def _missed(near: Any) -> str:
    """Which field came nearest, and the try that missed: "; AdamParams.eps set to 1e-13 gives
    1e-08 (with beta1=0.6, ...; it reached 1e-06)"."""
    if near is None:
        return ""
    name, (want, others, got) = near
    given = ", ".join(f"{k}={v:.4g}" for k, v in sorted(others.items()))
    if name.startswith("any of "):
        return f"; each set to {want:g} leaves the step eps {_eps(got or [])}"
    return (
        f"; nearest: AdamParams.{name} set to {want:g} "
        + (f"with {given} " if given else "with the other fields at their defaults ")
        + ("is refused" if got is None else f"gives the step eps {_eps(got)}")
    )


def _eps(values: list[float]) -> str:
    return ", ".join(sorted({f"{v:g}" for v in values}))


def _optimizer_lines(art: Any, where: dict[str, str]) -> list[dict[str, Any] | None]:
    """The ``def`` lines of the functions run, as source lines of the release."""
    out = []
    for spot in where.values():
        path, line = spot.rsplit(":", 1)
        out.append(_evidence.span(art, path.removeprefix(f"{art.name}/"), int(line)))
    return out


if __name__ == "__main__":
    raise SystemExit(_common.run(build_report))
