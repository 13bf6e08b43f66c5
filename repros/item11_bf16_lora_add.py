"""Item 11: the LoRA delta is added to the base output in BF16 in the forward pass.

Models the LoRA forward in ``art/megatron/lora.py`` at e2a406a48 (lines 1019-1020 and 1414; in
openpipe-art 0.5.20 ``LoRA.forward`` L933-L934 and ``SelfAttentionLinearProjLoRA.forward``
L1328, with the same ``base + adapter`` add in the other wrappers):
- ``LoRA.forward``: ``out = (x @ a_t) @ b_t`` then ``out * scale``, all BF16, so the delta
  reaches the add as a BF16 tensor;
- the wrapper returns ``base_output + lora_output``: BF16 + BF16, rounded once to BF16
  (round-to-nearest-even).
The suggested test adds the delta in FP32; that is the ``fixed`` side here (the sum is kept in
FP32).

What is measured, for deltas sized 2**-12 to 2**0 of the base (half-power-of-two steps), as the
effective delta ``(base + delta) - base`` against the delta itself:
- the fraction of the delta lost, 1 - <effective, delta> / <delta, delta>;
- the fraction of elements whose delta rounds away completely (effective delta exactly 0).
Two ways to size the delta:
- ``per_element``: delta = r * |base| with a random sign. This shows the threshold: BF16 keeps 8
  significant bits, so for |base| in [2**e, 2**(e+1)) the spacing is 2**(e-7) and half of it is
  2**(e-8), between 2**-9 and 2**-8 of |base|. Below r = 2**-9 every delta is lost, above
  r = 2**-8 none is lost completely; in between it depends on where |base| sits in its binade.
- ``gaussian``: independent N(0, 1) base and N(0, r**2) delta, r the RMS ratio: the smooth curve
  a layer with unrelated base and delta would see.

The audit's suggested test, the one-step logprob change (``one_step``): one projection of
Qwen3-4B's width (2560 -> 2560, BF16 weight, N(0, 1) BF16 inputs, 64 tokens) with a rank-8 LoRA
(alpha 32, scale 4; A from PEFT's uniform init, B = 0), then a small FP32 head (vocabulary 4096,
logit std about 3) scoring targets sampled from its softmax at T = 1. One Adam step on B at lr
5e-6 (Adam's first step moves every element by lr * sign(g); TrainerRank's default lr) makes
the delta; k steps are modelled as k times that step (k = 1, 10, 100, 1000; Adam's early steps
are about lr each). Measured per k: the target logprob change with the delta added in BF16 and
in FP32, the fraction of the FP32 change the BF16 add loses, and the fraction of delta elements
rounded away. Everything after the add is float64 on the stored values, so only the add differs.

Verdict: the claim is that part of an early-training delta rounds away in the forward. It holds
when the BF16 add loses more than 10% of the one-step (k = 1) logprob change that an FP32 add
keeps. The audit's own assessment is "probably leave it": this measures the size, not harm.

Assumptions: the base output is N(0, 1) in BF16 over 32 tokens x 2560 features (Qwen3-4B's
hidden size); the delta is a BF16 tensor (its own BF16 rounding in the LoRA GEMMs is not this
item's subject); only the ratio of delta to base matters, not their scale. Seed 0.
"""

from __future__ import annotations

import ast
import math
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _art_lora  # noqa: E402
import _art_whole  # noqa: E402
import _common  # noqa: E402
import _domain  # noqa: E402
import _dtype_read  # noqa: E402
import _evidence  # noqa: E402
import _simpler  # noqa: E402

SHAPE = (32, 2560)
EXPONENTS = [k / 2 for k in range(-24, 1)]  # r = 2**-12 ... 2**0 in half-power steps
# The FP32 add's own loss is ~1e-9 at the smallest ratios; below 1e-10 what is left is the
# float64 summation order of 81,920 terms (~1e-11, CPU-dependent), printed as "< 1e-10".
FIXED_FLOOR = 1e-10


def make_operands(ratio: float, mode: str, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """BF16 base output and BF16 LoRA delta with the delta sized ``ratio`` of the base."""
    gen = _common.seed_everything(seed)
    base = torch.randn(SHAPE, generator=gen).bfloat16()
    if mode == "per_element":
        sign = torch.randint(0, 2, SHAPE, generator=gen) * 2 - 1
        delta = (ratio * base.float().abs() * sign).bfloat16()
    elif mode == "gaussian":
        delta = (ratio * torch.randn(SHAPE, generator=gen)).bfloat16()
    else:
        raise ValueError(f"unknown mode {mode!r}")
    return base, delta


def add(base: torch.Tensor, delta: torch.Tensor, fixed: bool) -> torch.Tensor:
    """``base_output + lora_output`` as lora.py does it (BF16), or in FP32 (the fix)."""
    if fixed:
        return base.float() + delta.float()
    return base + delta


def loss_of_delta(base: torch.Tensor, delta: torch.Tensor, total: torch.Tensor) -> dict[str, float]:
    """How much of ``delta`` survived in ``total`` (float64 arithmetic on the stored values)."""
    d = delta.double()
    effective = total.double() - base.double()
    return {
        "lost": 1.0 - float((effective * d).sum() / (d * d).sum()),
        # The same figure as a ratio of sums over elements (independent here), with its error.
        "lost_est": _common.ratio_estimate(d * d - effective * d, d * d),
        "fully_lost": float(((effective == 0) & (d != 0)).double().mean()),
    }


def measure(fixed: bool = False, seed: int = 0) -> dict[str, Any]:
    """Fraction of the delta lost at each ratio, for both ways of sizing the delta."""
    out: dict[str, Any] = {"fixed": fixed, "ratios": [2.0**e for e in EXPONENTS]}
    for mode in ("per_element", "gaussian"):
        rows = []
        for ratio in out["ratios"]:
            base, delta = make_operands(ratio, mode, seed)
            rows.append(loss_of_delta(base, delta, add(base, delta, fixed)))
        out[mode] = {key: [row[key] for row in rows] for key in ("lost", "lost_est", "fully_lost")}
    out["one_step"] = one_step(fixed, seed)
    return out


STEP_D, STEP_TOKENS, STEP_VOCAB, STEP_RANK, STEP_SCALE, STEP_LR = 2560, 64, 4096, 8, 4.0, 5e-6
STEP_COUNTS = (1, 10, 100, 1000)
HEAD_LOGIT_STD = 3.0


def one_step(fixed: bool = False, seed: int = 0) -> dict[str, Any]:
    """Target logprob change after k LoRA steps: the add in BF16 (or FP32 if ``fixed``) vs FP32."""
    gen = _common.seed_everything(seed)
    d = STEP_D
    x = torch.randn(STEP_TOKENS, d, generator=gen).bfloat16()
    w0 = (torch.randn(d, d, generator=gen) / d**0.5).bfloat16()
    base = (x.float() @ w0.float().T).bfloat16()  # BF16 GEMM output, FP32 accumulation
    bound = 1.0 / d**0.5
    a_t = ((torch.rand(d, STEP_RANK, generator=gen) * 2 - 1) * bound).bfloat16()
    head = torch.randn(STEP_VOCAB, d, generator=gen).double() * (HEAD_LOGIT_STD / d**0.5)

    def logprobs(out: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        lp = torch.log_softmax(out.double() @ head.T, dim=-1)
        return lp.gather(1, targets[:, None]).squeeze(1)

    with torch.no_grad():
        probs = torch.softmax(base.double() @ head.T, dim=-1)
    targets = torch.multinomial(probs, 1, generator=gen).squeeze(1)
    before = logprobs(base, targets)
    # Gradient of the summed target logprob w.r.t. B at B = 0 (unaffected by the add's dtype).
    b_t = torch.zeros(STEP_RANK, d, dtype=torch.float64, requires_grad=True)
    xa = (x.float() @ a_t.float()).bfloat16().double()
    out = base.double() + (xa @ b_t) * STEP_SCALE
    logprobs(out, targets).sum().backward()
    assert b_t.grad is not None
    step = STEP_LR * b_t.grad.sign()  # Adam's first step, ascending the logprob
    rows = []
    for k in STEP_COUNTS:
        b_new = (k * step).bfloat16()
        delta = ((xa.bfloat16() @ b_new) * STEP_SCALE).bfloat16()  # LoRA.forward, BF16
        keep = base.float() + delta.float()
        tested = add(base, delta, fixed)
        change_ref = logprobs(keep, targets) - before
        change = logprobs(tested, targets) - before
        rows.append(
            {
                "steps": k,
                "delta_rms_over_base_rms": float(delta.double().square().mean().sqrt())
                / float(base.double().square().mean().sqrt()),
                "change_fp32_median_abs": float(change_ref.abs().median()),
                "change_tested_median_abs": float(change.abs().median()),
                "change_fp32_median_est": _common.quantile_estimate(change_ref.abs(), 0.5),
                "change_tested_median_est": _common.quantile_estimate(change.abs(), 0.5),
                "change_lost": 1.0 - float((change * change_ref).sum() / change_ref.square().sum()),
                # Over the tokens: delete-one jackknife of 1 - sum(c . c_ref) / sum(c_ref**2).
                "change_lost_est": _common.jackknife(
                    torch.stack([change * change_ref, change_ref.square()], dim=1),
                    lambda t: 1.0 - t[0] / t[1],
                ),
                "delta_rounded_away": float(
                    ((tested.double() == base.double()) & (delta != 0)).double().mean()
                ),
            }
        )
    return {"fixed": fixed, "rows": rows}


def threshold(result: dict[str, Any]) -> dict[str, float | None]:
    """Largest per-element ratio that loses every delta, smallest that loses none completely."""
    ratios, fully = result["ratios"], result["per_element"]["fully_lost"]
    all_lost = [r for r, f in zip(ratios, fully, strict=True) if f == 1.0]
    none_lost = [r for r, f in zip(ratios, fully, strict=True) if f == 0.0]
    return {
        "all_lost_up_to": max(all_lost) if all_lost else None,
        "none_lost_from": min(none_lost) if none_lost else None,
    }


def is_reproduced(result: dict[str, Any]) -> bool:
    """The BF16 add loses more than 10% of the one-step logprob change an FP32 add keeps."""
    first = result["one_step"]["rows"][0]
    return first["change_lost"] > 0.1


def build_report() -> _common.Report:
    """Item 11: fraction of a LoRA delta lost in the BF16 add, against an FP32 add."""
    cited = measure(fixed=False)
    fixed = measure(fixed=True)
    report = _common.Report(
        item="11",
        title="The LoRA delta is added in BF16 in the forward pass",
        models="art/megatron/lora.py L1019-L1020, L1414 at e2a406a48 "
        "(LoRA.forward and SelfAttentionLinearProjLoRA.forward: 0.5.20 L933-L934 and L1328, "
        "0.5.21 L992-L993 and L1387, 0.5.23 L1182-L1183 and L1606)",
        setting={
            "base": f"N(0, 1) in BF16, {SHAPE[0]} x {SHAPE[1]}",
            "ratios": "2**-12 .. 2**0 in half-power steps",
            "half BF16 ulp of |base| in [2**e, 2**(e+1))": "2**(e-8), i.e. 2**-9..2**-8 of |base|",
            "figures": "a ± is one standard error (over elements, or over the 64 tokens for "
            "the step rows: delete-one jackknife)",
            "seed": 0,
        },
    )
    for mode, label in (("per_element", "|delta| = r |base|"), ("gaussian", "RMS ratio r")):
        for i, exponent in enumerate(EXPONENTS):
            if exponent != int(exponent):
                continue  # the whole powers are enough for the table; tests use every point
            report.measure(
                f"{label}, r = 2**{int(exponent)}: fraction of delta lost",
                cited[mode]["lost_est"][i],
                fixed=_common.floored(fixed[mode]["lost"][i], FIXED_FLOOR, keep_zero=False),
            )
    edges = threshold(cited)
    report.measure(
        "largest r at which every per-element delta is lost",
        edges["all_lost_up_to"],
        note="theory: 2**-9 (half an ulp is at least 2**-9 of |base|; ties go to the even base)",
    )
    report.measure(
        "smallest r at which no per-element delta is lost completely",
        edges["none_lost_from"],
        note="theory: the first point above 2**-8 (at 2**-8 a base that is a power of two ties)",
    )
    for row, fixed_row in zip(cited["one_step"]["rows"], fixed["one_step"]["rows"], strict=True):
        k = row["steps"]
        size = row["delta_rms_over_base_rms"]
        label = f"{k} step{'s' if k > 1 else ''} (delta RMS {size:.2g} of base)"
        report.measure(
            f"{label}: fraction of the FP32-add logprob change lost",
            row["change_lost_est"],
            fixed=_common.floored(fixed_row["change_lost"], FIXED_FLOOR, keep_zero=False),
            note=f"median |change| {row['change_tested_median_est']} nats, FP32 add "
            f"{row['change_fp32_median_est']}; delta elements rounded away "
            f"{row['delta_rounded_away']:.3g}",
        )
    report.note(
        "One-step test (the audit's suggestion): after one Adam step from B = 0 the delta is far "
        "below half an ulp of the base, so the BF16 add drops most of it and the target "
        "logprobs barely move, where an FP32 add moves them. As the delta grows over steps the "
        "loss shrinks. This is the size of the effect; whether it matters for training is not "
        "checked (the audit: probably leave it; gradients are unaffected)."
    )
    report.note(
        "A negative 'lost' fraction means the delta grew: between 2**-9 and 2**-8 a delta just "
        "over half an ulp rounds up to a whole ulp, up to twice its size."
    )
    report.note(
        "The audit gives no figure for this item (confidence: speculative); these are the "
        "arithmetic's. As the audit says, gradients are unaffected: the add's backward passes "
        "the upstream gradient through unchanged, whatever the forward rounded."
    )
    report.claim("forward-delta-rounds-away", is_reproduced(cited) and not is_reproduced(fixed))
    report.reproduced = is_reproduced(cited) and not is_reproduced(fixed)
    return report


CLAIM = "forward-delta-rounds-away"
# The check's run. The claim depends on the dtype of the add (the model dtype, and any gate a
# fix puts on a mode, a size or a configuration): the wrappers are built 64 features wide in
# the covering array, with rows up to ART's packed 8,192 tokens, LoRA ranks 1-64 (ART's
# defaults 1 and 8), B drawn as after the first steps so the delta is about 1e-5 to 1e-2 of the
# base, on 1 process or on 2 or 8 ranks with torch.distributed initialised (ART's Megatron
# training always runs initialised; issue #53, the second review's fake that adds in FP32 only
# when it is not: _art_lora.ranks).
ADD_FACTORS: dict[str, tuple[Any, ...]] = {
    "wrapper": tuple(_art_lora.RUN_WRAPPERS),
    "dtype": ("float16", "bfloat16"),
    "mode": ("eval", "train"),
    "tokens": (1, 32, 8192),
    "b_std": (1e-6, 1e-4, 1e-3),
    "rank": (1, 8, 64),
    "features": (64,),
    "world_size": (1, 2, 8),
}
# Real models' widths, one edge each (issue #53, the second review's fake that adds in FP32 only
# up to 2,560 features): the attention output projection at Qwen3-4B's hidden 2,560, Qwen3-8B's
# 4,096 and a 70B model's 8,192; the MLP's fused gate and up projection (the shared experts' FC1
# wrapper, 2 x intermediate wide) at a 32B-70B model's intermediate 28,672 (57,344 output
# features), from a 64-wide input (a full 8,192-wide weight would hold 470M elements; the add
# sees the output's width, and the proj edges give the input real widths). 4-8 tokens, rank 8,
# on 8 ranks.
WIDE = {"dtype": "bfloat16", "mode": "train", "b_std": 1e-4, "rank": 8, "world_size": 8}
WIDTHS: tuple[dict[str, Any], ...] = (
    {"wrapper": _art_lora.WRAPPER, "features": 2560, "tokens": 8},
    {"wrapper": _art_lora.WRAPPER, "features": 4096, "tokens": 8},
    {"wrapper": _art_lora.WRAPPER, "features": 8192, "tokens": 4},
    {"wrapper": "SharedExpertsLinearFC1LoRA", "features": 28672, "in_features": 64, "tokens": 4},
)
ADD_COVERS = (
    "every pair of: 5 wrappers run (attention proj and QKV, shared experts' FC1, gated-delta-"
    "net in_proj, componentwise column proj); float16/bfloat16; train with grad, eval under "
    "no_grad; 1-8,192 tokens a row; B std 1e-6 to 1e-3; LoRA rank 1-64; 1 process, or 2-8 "
    "ranks with torch.distributed initialised; 64 features, and real widths: the attention "
    "proj at 2,560, 4,096 and 8,192, the MLP's gate and up at 2 x 28,672; 4 seeded draws. "
    "Measured: the share of the wrapper's own adapter output missing from output - base"
)
# Not run: their LoRA is ART's QuACK grouped GEMM (kernels/cute_grouped_lora_quack.py), whose
# _validate_inputs refuses tensors that are not on CUDA; their add is read (_dtype_read).
READ_WRAPPERS = ("MLPExpertsLinearFC1LoRA", "MLPExpertsLinearFC2LoRA")


def add_edges() -> list[dict[str, Any]]:
    """artbot's deterministic inputs (ART-free): the covering array, then real models' widths
    (:data:`WIDTHS`)."""
    return [*_simpler.pairwise(ADD_FACTORS), *({**WIDE, **width} for width in WIDTHS)]


def add_sample(rng: Any) -> dict[str, Any]:
    return {k: rng.choice(v) for k, v in ADD_FACTORS.items()}


def judge_add(case: dict[str, Any], raw: Any) -> _domain.Failure | None:
    """artbot's half (pure): more of the wrapper's adapter output is missing from
    ``output - base`` than an FP32 add loses, ``8 eps32 |base| / |adapter|`` (at least 1e-6)."""
    try:
        lost, adapter, base = (float(raw[k]) for k in ("lost", "adapter", "base"))
    except (KeyError, TypeError, ValueError):
        return _domain.Failure(f"no norms measured ({str(raw)[:60]})", "lost, adapter, base")
    if not (adapter > 0 and lost >= 0 and base >= 0 and math.isfinite(lost / adapter + base)):
        return _domain.Failure(f"adapter {adapter:.3g}, lost {lost:.3g}, base {base:.3g}", "norms")
    bound = 8 * 2.0**-23 * base / adapter  # 2**-23: torch.finfo(torch.float32).eps
    if lost / adapter > max(bound, 1e-6):
        return _domain.Failure(round(lost / adapter, 4), f"{bound:.2g} (share of the delta lost)")
    return None


ORACLES = {CLAIM: _domain.Oracle(judge=judge_add, edges=add_edges, sample=add_sample, draws=4)}


def _run_add(whole: _art_whole.Whole, channel: Any = None, seed: int = 0) -> dict[str, Any]:
    """Every wrapper of :data:`_art_lora.RUN_WRAPPERS`, built by lora.py's ``__init__`` around
    a stand-in TE base and run forward over the domain (``_art_lora.lora_add`` measures,
    :func:`judge_add` decides, here and again in artbot)."""
    seen: dict[str, Any] = {}

    def measure(case: dict[str, Any]) -> dict[str, Any]:
        raw = _art_lora.lora_add(whole, case)
        seen.setdefault("out", set()).add(raw["out_dtype"])
        return raw

    simplest: dict[str, tuple[Any, ...]] = {
        "dtype": ("bfloat16",),
        "mode": ("eval", "train"),
        "tokens": (1, 32),
        "rank": (8,),
        "b_std": (1e-4,),
        "features": (64,),
        "world_size": (1,),
    }
    oracle = ORACLES[CLAIM]
    found = _simpler.search(
        ADD_COVERS,
        add_edges(),
        None,
        simplest,
        sample=add_sample,
        samples=oracle.draws,
        seed=seed,
        claim=CLAIM,
        channel=channel,
        measure=measure,
        judge=judge_add,
    )
    stand_ins = [
        _art_lora.BASE_STAND_INS,
        "provider (tensor-parallel size 1)",
        "torch.distributed of 2 or 8 ranks (initialised; item 6's)",
        *whole.said(),
    ]
    return {"found": found, "out": ", ".join(sorted(seen.get("out", ()))), "stand_ins": stand_ins}


def _read_adds(art: Any) -> list[tuple[int, str, bool, str]]:
    """The add of each wrapper that cannot run on a CPU (:data:`READ_WRAPPERS`, and any class
    lora.py adds later that no builder knows), read with ``_dtype_read``: (line, class, made
    and kept in FP32, how)."""
    out = []
    for cls in ast.parse(art.source("megatron/lora.py")).body:
        if not isinstance(cls, ast.ClassDef) or cls.name in (*_art_lora.RUN_WRAPPERS, "LoRA"):
            continue
        for fn in cls.body:
            if isinstance(fn, ast.FunctionDef) and fn.name == "forward":
                reader = _dtype_read.Reader(fn)
                for ret in _dtype_read.returned_adds(fn):
                    wide, how = _dtype_read.add_kept_wide(reader, ret)
                    out.append((ret.lineno, cls.name, wide, how))
    return out


def check_art(art: Any) -> dict[str, Any]:
    """Run ART's LoRA wrappers' forward add in ``art``; read the two that cannot run here.

    - Ran, from ``megatron/lora.py`` imported whole: the five wrappers whose LoRA runs on a
      CPU (:data:`_art_lora.RUN_WRAPPERS`), each built by its own ``__init__`` around a
      stand-in of its TE base layer (``_art_lora``: output and normed input in the input's
      dtype), run forward twice per input, with the base's output and with it zero (the
      adapter's output alone, exactly); measured: the share of that adapter output missing
      from ``output - base``.
    - Read (``ast``, ``_dtype_read``): the MoE experts' FC1 and FC2 wrappers' ``return base +
      delta, bias`` (their LoRA is ART's QuACK grouped GEMM, which refuses CPU tensors).

    Reproduced: on some input of :data:`ADD_COVERS` more of the delta is lost than an FP32 add
    loses (``8 eps32 |base| / |delta|``), or an expert wrapper's add is read below FP32. Fixed:
    neither. The size of what rounds away at a real model's scale is this script's measurement.
    """
    with _art_whole.whole(art) as whole:
        run = _run_add(whole, art)
    read = _read_adds(art)
    low = [(n, name, how) for n, name, wide, how in read if not wide]
    found = run["found"]
    hit = not found.holds or bool(low)
    path = f"{art.name}/megatron/lora.py"
    detail = (
        f"ran 5 wrappers' forward ({path} imported whole): output in {run['out'] or '?'}; "
        f"{_simpler.said(found)}; read the {len(read)} expert wrappers' base + delta returns: "
        + (
            f"{len(low)} below FP32 ("
            + ", ".join(f"L{n} {name} {how}" for n, name, how in low[:3])
            + (", ..." if len(low) > 3 else "")
            + ")"
            if low
            else "all made and kept in FP32"
        )
    )
    at = [_evidence.function(art, "megatron/lora.py", _art_lora.WRAPPER)]
    at += [_evidence.span(art, "megatron/lora.py", n) for n, _name, _how in low[:1]]
    return {
        "claims": {
            CLAIM: _evidence.claim(hit, detail, method="ran", at=at, domain=_domain_of(run, read))
        },
        "detail": detail,
        "ran": [
            f"{path} imported whole; {', '.join(_art_lora.RUN_WRAPPERS)}: __init__ and forward, "
            "run",
            f"{path}: {', '.join(READ_WRAPPERS)} base + delta returns (ast, read)",
        ],
        "scope": f"five wrappers run on CPU (stand-ins: {'; '.join(run['stand_ins'])}); the MoE "
        "experts' FC1 and FC2 adds read by meaning, not run: their LoRA is ART's QuACK grouped "
        "GEMM, which refuses tensors not on CUDA; what rounds away at a real model's scale is "
        "this script's measurement",
    }


def _domain_of(run: dict[str, Any], read: list[tuple[int, str, bool, str]]) -> dict[str, Any]:
    """The run's domain, the reading of the expert wrappers said beside it; a low add read is
    the counterexample when the run found none."""
    domain = run["found"].domain()
    domain["covers"] = (domain["covers"] + f"; {len(read)} expert wrappers' adds read")[:400]
    low = [(n, name, how) for n, name, wide, how in read if not wide]
    if domain["counterexample"] is None and low:
        n, name, how = low[0]
        domain["counterexample"] = {
            "inputs": {"wrapper": name, "line": n},
            "measured": how,
            "bound": "added and returned in FP32",
        }
    return domain


if __name__ == "__main__":
    raise SystemExit(_common.run(build_report))
