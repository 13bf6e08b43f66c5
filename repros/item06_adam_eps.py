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
import random
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _art_optimizer  # noqa: E402
import _art_whole  # noqa: E402
import _common  # noqa: E402
import _domain  # noqa: E402
import _evidence  # noqa: E402
from _adam_eps_oracle import (  # noqa: E402
    CONFIG,
    CONFIG_COVERS,
    CONFIG_DIMENSIONS,
    DAMP,
    DAMP_COVERS,
    EPS_MEGATRON,
    ORACLES,
    config_shrink,
    damping,
    eps_text,
    nearest,
    reaching,
)

LR, BETAS, WEIGHT_DECAY, CLIP_NORM = 5e-6, (0.9, 0.99), 0.1, 0.1
EPS_TRAINER_RANK = 1e-8  # torch's AdamW default; Megatron's EPS_MEGATRON is 1e-13
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


# --- artbot's check against ART's code (issue #50: ART's own step; #53: the split) -----------
# Both claims are split: ``measure`` runs ART's TrainerRank.optim_step (``_art_optimizer``) in
# the check's process and returns numbers; ``judge`` decides, here and again in artbot's own
# process. One contract for both (issue #51), the audit's: "add eps to AdamParams and the
# cross-rank config guard", so that TrainerRank can take the Megatron backend's step.
def lora_in_art(
    built: Any, adam: Any, *, seed: int, tokens: int, parameters: int, steps: int = 3
) -> dict[str, Any]:
    """This script's LoRA pair (and one tensor standing for every other LoRA parameter's
    gradient in the global norm) stepped through ART's ``optim_step`` with ``adam`` until A
    first moves: A's median |update| / lr there (its weight decay undone) and |grad A|."""
    gen = torch.Generator().manual_seed(seed)
    bound = 1.0 / math.sqrt(D_MODEL)
    lora_a = (torch.rand(D_MODEL, RANK, generator=gen) * 2 - 1) * bound
    rank = built.rank((lora_a, torch.zeros(RANK, D_MODEL), torch.zeros(64)))
    lr, decay = float(adam.learning_rate), float(adam.weight_decay)
    for step in range(1, steps + 1):
        a, b, _rest = (p.detach().clone().requires_grad_(True) for p in built.slot(rank))
        x = torch.randn(tokens, D_MODEL, generator=gen)
        grad_y = torch.randn(tokens, D_MODEL, generator=gen) * 1e-3
        (LORA_SCALE * (x @ a) @ b * grad_y).sum().backward()
        assert a.grad is not None and b.grad is not None
        layer = float(a.grad.square().sum() + b.grad.square().sum())
        others = layer * (parameters / MODULE_PARAMETERS - 1)  # the rest of the global norm
        rest = torch.full((64,), math.sqrt(others / 64))
        before = built.slot(rank)[0].detach().double().clone()
        metrics = built.step(rank, adam, (a.grad, b.grad, rest))
        update = built.slot(rank)[0].detach().double() - before * (1 - lr * decay)
        moved = float(update.abs().median()) / lr
        if moved > 1e-3:
            clip = float(adam.grad_clip_norm) / (metrics["grad_norm"] + 1e-6)
            return {
                "step": step,
                "update_a_over_lr": moved,
                "grad_a_median": float(a.grad.abs().median()) * min(1.0, clip),
                "betas": [float(adam.beta1), float(adam.beta2)],
            }
    return {"step": None}


def measure_damping(built: Any, parameters: int, case: dict[str, Any]) -> dict[str, Any]:
    """The damping claim's measure: the smallest eps a step can be given (defaults, or a field
    set to the case's eps), and A's first update under it, through ART's step."""
    found = _art_optimizer.smallest_eps(built, float(case["asked_eps"]))
    if found is None:
        return {"eps": None}
    eps, how, adam = found
    run = lora_in_art(
        built, adam, seed=int(case["seed"]), tokens=int(case["tokens"]), parameters=parameters
    )
    return {"eps": eps, "given_by": how, **run}


def check_art(art: Any) -> dict[str, Any]:
    """Both claims through ``TrainerRank.optim_step`` of ART's ``_impl.py`` imported whole
    (``_art_optimizer``), searched over each claim's ``ORACLES`` inputs (artbot's plan when it
    sent one). eps-not-configurable: fixed when some field of AdamParams, whatever it is called,
    set to the input's eps is the eps every parameter's step uses (solved from the step, never
    read from ``param_groups``), and the cross-rank guard refuses two ranks differing only in
    it. eps-damps-tiny-updates: fixed when, with the smallest eps a step can be given (by
    default, or through a field set to Megatron's 1e-13), A's first update is not damped: the
    audit's fix with the default left at 1e-8 fixes both claims; an eps hard-coded to 1e-13
    fixes only this one."""
    with _art_whole.whole(art) as whole:
        built = _art_optimizer.TrainerRankOnCpu(art, whole)
        config = _search(art, CONFIG, lambda c: _art_optimizer.probe(built, c), config_shrink)
        modules = _art_optimizer.target_modules(art, "Qwen/Qwen3-4B")
        parameters = lora_parameters(modules)
        damp = _search(art, DAMP, lambda c: measure_damping(built, parameters, c), None)
        said = whole.said()
    where = built.where
    entry = f"TrainerRank.optim_step ({where['optim_step']})"
    config_text = _config_detail(art, config, built, entry)
    damp_raw = _raw(art, DAMP, damp.failure[0] if damp.failure else None)
    if damp_raw.get("eps") is None:
        damp_hit: bool | None = None
        damp_text = f"AdamParams has a field without a default ({built.params_at}) and no field "
        damp_text += "reaches the step: not checked"
    else:
        damp_hit = not damp.holds
        ratio = damping(damp_raw)
        damp_text = (
            f"the smallest eps a step can be given: {damp_raw['eps']:g} ({damp_raw['given_by']}; "
            f"ran: {entry}); A's first update (step {damp_raw['step']}) is {ratio:.3g} of "
            f"the update eps 1e-13 gives at the median |grad A| "
            f"{damp_raw['grad_a_median']:.2g}, with ART's clip over {parameters:,} LoRA "
            "parameters (ART's target modules for "
            f"Qwen/Qwen3-4B: {', '.join(modules)}); {_inputs(damp.inputs)}"
        )
    at = [_span(art, spot) for spot in where.values()]
    config_domain, damp_domain = config.domain(), damp.domain()
    if "counterexample" in config.extra:  # the field that missed, and the other fields given
        config_domain["counterexample"] = config.extra["counterexample"]
    if damp.failure is not None and damp_hit:  # the eps the step used, and how it was had
        damp_domain["counterexample"] = {
            "inputs": {"eps": float(f"{damp_raw['eps']:.3g}"), "given by": damp_raw["given_by"]},
            "measured": f"A's first update {ratio:.3g} of the update eps 1e-13 gives",
            "bound": "0.9 of it",
        }
    return {
        "claims": {
            CONFIG: _evidence.claim(
                not config.holds, config_text, method="ran", at=at, domain=config_domain
            ),
            DAMP: _evidence.claim(
                damp_hit, damp_text, method="modelled", at=at, domain=damp_domain
            ),
        },
        "detail": f"{config_text}; {damp_text}",
        "ran": [
            *(f"{spot} {name} (imported whole, run)" for name, spot in where.items()),
            f"{art.name}/megatron/model_support/registry.py:default_target_modules_for_model",
        ],
        "scope": "ART's trainer_rank/_impl.py imported whole, entered at TrainerRank.optim_step "
        "on CPU (an uninitialised TrainerRank with one FP32 slot of 2-1,024 parameter tensors, a "
        "stand-in runtime; a stand-in torch.distributed of the case's 1-8 ranks, two at least for "
        f"the guard; {', '.join(said)}); the damping's gradients "
        "from a modelled LoRA layer",
    }


def _search(art: Any, cid: str, measure: Any, shrink: Any) -> _domain.Found:
    oracle = ORACLES[cid]
    edges = oracle.edges() if oracle.edges is not None else []
    covers = CONFIG_COVERS if cid == CONFIG else DAMP_COVERS
    found = _domain.search(
        claim=cid,
        channel=art,
        measure=measure,
        judge=oracle.judge,
        edges=edges,
        sample=oracle.sample or _no_sample,
        max_inputs=len(edges) + oracle.draws,
        shrink=shrink,
        covers=covers,
    )
    if found.failure is not None and cid == CONFIG:
        found.extra["raw"] = _raw(art, cid, found.failure[0])
    return found


def _no_sample(rng: random.Random) -> dict[str, Any]:
    raise AssertionError("no draws")


def _raw(art: Any, cid: str, case: dict[str, Any] | None) -> dict[str, Any]:
    """What was measured on ``case`` (the last measured input when None)."""
    tape = art.tape.get(cid) or [{"case": None, "raw": {}}]
    if case is not None:
        wanted = _domain.as_json(case)
        return next(t["raw"] for t in reversed(tape) if t["case"] == wanted)
    return tape[-1]["raw"]


def _config_detail(art: Any, found: _domain.Found, built: Any, entry: str) -> str:
    guard_at = built.where["_guard_optim_step_configuration"]
    if found.failure is None:
        tape = art.tape[CONFIG]
        first = tape[0]
        name = reaching(first["case"], first["raw"])[0]
        got = first["raw"]["fields"][name]
        return (
            f"ran {entry}: AdamParams.{name} ({built.params_at}) is the step's eps on "
            f"{_inputs(found.inputs)} ({first['case']['eps']:g} -> step eps "
            f"{eps_text(got['first'])}, ...); a later step with {name} "
            f"{first['case']['eps_other']:g} leaves {eps_text(got['later'] or [])}; the "
            f"cross-rank guard ({guard_at}) tells two ranks apart that differ only in it"
        )
    case, fail = found.failure
    raw = found.extra["raw"]
    default = f"eps {eps_text(raw['default'])}" if raw["default"] else "none (a required field)"
    layout = ("tensors", "world_size")  # the slot's parameter tensors and the ranks
    shown = {
        k: v for k, v in case.items() if k in CONFIG_DIMENSIONS and k not in ("eps", *layout) and v
    }
    given = ", ".join(f"{k}={v:.4g}" for k, v in shown.items())
    name, value, got = nearest(case, raw)
    counterexample = {
        "inputs": {
            "field": name,
            "set to": value,
            **{f"{k} (other field)": float(f"{v:.4g}") for k, v in shown.items()},
            "parameter tensors": int(case.get("tensors") or 2),
            "ranks": int(case.get("world_size") or 1),
        },
        "measured": fail.measured,
        "bound": fail.bound,
    }
    found.extra["counterexample"] = counterexample
    found_fields = reaching(case, raw)
    if found_fields:
        return (
            f"ran {entry}: AdamParams.{found_fields[0]} ({built.params_at}) is the step's eps; "
            f"the cross-rank guard ({guard_at}) does not compare it: two ranks that differ "
            "only in it pass (the audit's fix adds eps to AdamParams and the cross-rank config "
            "guard)"
        )
    missed = (
        f"each set to {value:g} leaves the step eps {eps_text(got or [])}"
        if name.startswith("any of ")
        else f"nearest: AdamParams.{name} set to {value:g} "
        + (f"with {given} " if given else "with the other fields at their defaults ")
        + ("is refused" if got is None else f"gives the step eps {eps_text(got)}")
    )
    return (
        f"ran {entry}: no field of AdamParams ({', '.join(raw['fields'])}) reaches the "
        f"step's eps ({built.params_at}); {missed} ({int(case.get('tensors') or 2)} parameter "
        f"tensors, {int(case.get('world_size') or 1)} rank(s)); a step from AdamParams' "
        f"defaults uses {default}"
    )


def _inputs(n: int) -> str:
    return f"{n} input" if n == 1 else f"all {n} inputs"


def _span(art: Any, spot: str) -> dict[str, Any] | None:
    """The ``def`` line of a function run, as a source line of the release."""
    path, line = spot.rsplit(":", 1)
    return _evidence.span(art, path.removeprefix(f"{art.name}/"), int(line))


if __name__ == "__main__":
    raise SystemExit(_common.run(build_report))
