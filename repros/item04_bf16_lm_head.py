"""Item 4: TrainerRank's LM head returns BF16 logits; everything after it is FP32.

Models ``TrainerRank._local_logits_from_hidden_rows`` in ``art/trainer_rank/_impl.py`` (lines
5948-5971 at e2a406a48; lines 5139-5161 in openpipe-art 0.5.20) and what consumes its output:
- the output layer is a BF16 GEMM: BF16 hidden rows times the BF16 head weight, accumulated in
  FP32 and stored as BF16 logits (``model._scale_logits`` is taken to leave them as they are:
  no logit multiplier configured);
- ``_vocab_parallel_log_z`` (0.5.20 lines 6037-6049): ``.float()``, row max, ``exp(x - max)``
  summed in FP32, ``log_z = max + log(sum)`` (on CUDA the Triton stats kernel that replaces it
  also keeps the max and the sum in FP32);
- ``_vocab_parallel_target_logprobs`` (0.5.20 lines 5901-5923): ``logits[label].float() - log_z``.
Single tensor-parallel rank, so the all-reduces are identities. The suggested fix is an
FP32-output GEMM for the head chunk: the same inputs, the logits kept in FP32.

What is measured, against a float64 head on the same BF16 hidden rows and weight:
- the per-token target-logprob error |logprob - logprob64| (p50, p90, p99);
- the gradient of the summed target logprob with respect to the hidden rows (the T x H matrix
  ``(onehot - softmax) @ W``): relative L2 change and cosine. Only the logits differ between the
  two sides; softmax and the product with W are float64 on both, so the figure isolates the
  logit rounding (the BF16 store of d(logits) and the backward GEMM are not part of this item);
- the bias of 1 - p_t: the mean over tokens of (1 - p_t) / (1 - p_t,64) - 1 with its standard
  error, beside the expected bias from each logit's BF16 spacing. Rounding a logit x to BF16 adds
  an error that behaves like uniform noise of variance s(x)**2 / 12, s(x) the spacing; to second
  order E[d(1 - p_t)] = -1/2 * sum_j d2 p_t / d x_j2 * s(x_j)**2 / 12, which is
  s**2 / 12 = 0.52% of 1 - p_t for a confident token whose competing logits sit in [32, 64).

Setting (synthetic head; the audit measured Qwen3-4B on 294 assistant tokens, which this does
not have), chosen to look like a language model's next-token distribution, not tuned to the
audit's figures:
- vocabulary 32,768 and hidden size 2560 (Qwen3-4B's), 294 tokens, seed 0. Qwen3's vocabulary
  is 151,936; 32,768 keeps the float64 reference affordable on 2 CPUs, and what the rounding does
  is decided by the few dozen logits near the top: the other ~32k sit tens of nats below, and
  their share of the softmax (printed in the setting as its largest over tokens) is negligible;
- head rows are N(0, 1/H) in BF16. Each token has 32 candidate rows, drawn at random, whose
  logits are set exactly (the hidden row is the least-norm solution of W_C h = z_C, then rounded
  to BF16): the top candidate's logit c is uniform on [35, 47) (the audit's "logits around
  35-47"), the others sit min(s_t * G_k, 30) below it, G_k a running sum of Exp(1) draws;
- the per-token scale s_t is heavy-tailed, s_t = s0 * exp(Z), Z ~ N(0, 1): most tokens are
  confident and some are split over many candidates, as in text. s0 is calibrated so the mean
  entropy of the 32 candidates is 0.6 nats (inside 0.4-0.9 nats, the range we take for an
  instruction-tuned model's assistant tokens at T = 1); the achieved entropy over the full
  vocabulary is measured and printed;
- the target token is sampled from the float64 softmax at T = 1, as a sampled completion's are;
- errors are also reported binned by p_t (the target's float64 probability).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

VOCAB = 32_768
HIDDEN = 2560
TOKENS = 294
CANDIDATES = 32
TARGET_ENTROPY = 0.6  # nats, over the candidates; s0 is solved for it
TOP_LOGIT_RANGE = (35.0, 47.0)
# A candidate more than 30 nats below the top has a softmax share under 1e-13: held there, so a
# confident token's candidates stay at the top of the bulk instead of far below it.
MAX_GAP = 30.0
CHUNK = 64  # tokens per head chunk, to keep the float64 [chunk, vocab] tensors small
P_BINS = (0.0, 0.5, 0.9, 0.99, 1.0)
# An FP32-output head's error is rounding-level (~1e-6 nats) and its digits depend on the
# CPU's summation order; below this floor it prints as "< 1e-04".
FIXED_FLOOR = 1e-4

AUDIT = {
    "p50": None,
    "p90": "0.075 nats",
    "p99": "0.13 nats",
    "grad_rel_l2": "1.1%",
    "grad_one_minus_cos": "6e-05 (cosine 0.99994)",
    "bias": "+0.5%",
}


def _entropy(gaps: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Entropy (nats) of softmax(-scale * gaps) per row, float64."""
    logp = torch.log_softmax(-(scale[:, None] * gaps).clamp(max=MAX_GAP).double(), dim=1)
    return -(logp.exp() * logp).sum(dim=1)


def calibrate_scale(gaps: torch.Tensor, spread: torch.Tensor, target: float) -> float:
    """s0 such that the mean candidate entropy with s_t = s0 * spread_t is ``target``."""
    lo, hi = -10.0, 10.0  # log s0; the entropy falls monotonically as s0 grows
    for _ in range(60):
        mid = (lo + hi) / 2
        if float(_entropy(gaps, math.exp(mid) * spread).mean()) > target:
            lo = mid
        else:
            hi = mid
    return math.exp((lo + hi) / 2)


def make_head(seed: int = 0, tokens: int = TOKENS) -> tuple[torch.Tensor, torch.Tensor, float]:
    """BF16-valued head weight [V, H], hidden rows [T, H] (held in FP32), and s0."""
    gen = _common.seed_everything(seed)
    weight = _common.to_bf16(torch.randn(VOCAB, HIDDEN, generator=gen) / math.sqrt(HIDDEN))
    ids = torch.stack([torch.randperm(VOCAB, generator=gen)[:CANDIDATES] for _ in range(tokens)])
    top = TOP_LOGIT_RANGE[0] + (TOP_LOGIT_RANGE[1] - TOP_LOGIT_RANGE[0]) * torch.rand(
        tokens, generator=gen
    )
    steps = -torch.log(torch.rand(tokens, CANDIDATES - 1, generator=gen))  # Exp(1)
    gaps = torch.cat([torch.zeros(tokens, 1), steps.cumsum(dim=1)], dim=1)
    spread = torch.exp(torch.randn(tokens, generator=gen))
    s0 = calibrate_scale(gaps, spread, TARGET_ENTROPY)
    wanted = top[:, None] - ((s0 * spread)[:, None] * gaps).clamp(max=MAX_GAP)  # [T, C]
    rows = weight[ids].double()  # [T, C, H]
    # Least-norm h with rows @ h = wanted: h = rows^T (rows rows^T)^-1 wanted.
    gram = rows @ rows.transpose(1, 2)
    coef = torch.linalg.solve(gram, wanted.double()[..., None])
    hidden = (rows.transpose(1, 2) @ coef).squeeze(-1).float()
    return weight, _common.to_bf16(hidden), s0


def _logprobs_fp32(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``_vocab_parallel_log_z`` then ``_vocab_parallel_target_logprobs``, in FP32."""
    logits = logits.float()
    row_max = logits.max(dim=-1).values
    log_z = row_max + torch.log(torch.exp(logits - row_max[:, None]).sum(dim=-1))
    return logits.gather(1, targets[:, None]).squeeze(1).float() - log_z


def _second_order_bias(
    logits64: torch.Tensor, probs64: torch.Tensor, targets: torch.Tensor
) -> torch.Tensor:
    """Expected relative change of 1 - p_t from rounding each logit to BF16 (second order)."""
    # Logits with p below 1e-18 add under 1e-12 of any token's 1 - p_t here; skip them.
    rows, cols = (probs64 > 1e-18).nonzero(as_tuple=True)
    x, p = logits64[rows, cols], probs64[rows, cols]
    # frexp: |x| = m * 2**e with m in [0.5, 1); BF16 keeps 8 significant bits: spacing 2**(e-8).
    _, exponent = torch.frexp(x)
    var = torch.exp2((exponent - 8).double()).square() / 12.0
    p_t = probs64.gather(1, targets[:, None]).squeeze(1)
    # d2 p_t / d x_j2 = p_t p_j (2 p_j - 1) for j != t and p_t (1 - p_t)(1 - 2 p_t) for j = t.
    curvature = torch.where(
        cols == targets[rows],
        p_t[rows] * (1.0 - p_t[rows]) * (1.0 - 2.0 * p_t[rows]),
        p_t[rows] * p * (2.0 * p - 1.0),
    )
    summed = torch.zeros_like(p_t).index_add_(0, rows, curvature * var)
    return -0.5 * summed / (1.0 - p_t)


def _variant_stats(
    logits: torch.Tensor,
    targets: torch.Tensor,
    logprob64: torch.Tensor,
    probs64: torch.Tensor,
    weight: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """Per-chunk errors of one head variant (BF16 or FP32 logits) against float64."""
    logprob = _logprobs_fp32(logits, targets).double()
    log_probs = _common.log_softmax64(logits)
    lp_exact = log_probs.gather(1, targets[:, None]).squeeze(1)
    # grad = W[y] - softmax @ W, so the change between two heads is (p64 - p) @ W.
    # FP32 product: the change itself only needs ~1e-7 relative accuracy, and FP32 is 4x faster.
    grad_change = (probs64 - log_probs.exp_()).float() @ weight
    return {
        "error": (logprob - logprob64).abs(),
        "one_minus_p": -torch.expm1(lp_exact),
        "grad_change": grad_change,
    }


def measure(seed: int = 0, tokens: int = TOKENS) -> dict[str, Any]:
    """Errors of the BF16-output head (``cited``) and the FP32-output head (``fixed``).

    Both variants share the same draw and the same float64 reference, computed in one pass.
    """
    weight, hidden, s0 = make_head(seed, tokens)
    weight64 = weight.double()
    sampler = torch.Generator().manual_seed(seed + 1)
    parts: dict[str, dict[str, list[torch.Tensor]]] = {"cited": {}, "fixed": {}}
    sums = {name: {"diff_sq": 0.0, "dot": 0.0} for name in parts}
    keys = ("one_minus_p", "p", "top", "expected", "entropy", "tail")
    ref: dict[str, list[torch.Tensor]] = {k: [] for k in keys}
    grad_ref_sq = 0.0
    for start in range(0, tokens, CHUNK):
        h = hidden[start : start + CHUNK]
        logits64 = h.double() @ weight64.T
        log_probs64 = _common.log_softmax64(logits64)
        probs64 = log_probs64.exp()
        # The target is sampled at T = 1, as the tokens of a sampled completion are.
        y = torch.multinomial(probs64, 1, generator=sampler).squeeze(1)
        logprob64 = log_probs64.gather(1, y[:, None]).squeeze(1)
        ref["entropy"].append(-(probs64 * log_probs64).sum(dim=1))
        ref["tail"].append(1.0 - probs64.topk(CANDIDATES, dim=1).values.sum(dim=1))
        grad64 = weight[y] - probs64.float() @ weight
        grad_ref_sq += float(grad64.double().square().sum())
        ref["one_minus_p"].append(-torch.expm1(logprob64))
        ref["p"].append(logprob64.exp())
        ref["top"].append(logits64.max(dim=-1).values)
        ref["expected"].append(_second_order_bias(logits64, probs64, y))
        del logits64, log_probs64
        # A BF16 GEMM accumulates in FP32 and rounds once on the store; the fix keeps FP32.
        logits32 = h @ weight.T
        for name, logits in (("cited", _common.to_bf16(logits32)), ("fixed", logits32)):
            stats = _variant_stats(logits, y, logprob64, probs64, weight)
            change = stats.pop("grad_change").double()
            sums[name]["diff_sq"] += float(change.square().sum())
            sums[name]["dot"] += float((change * grad64.double()).sum())
            for key, value in stats.items():
                parts[name].setdefault(key, []).append(value)

    one_minus_p64 = torch.cat(ref["one_minus_p"])
    p_target = torch.cat(ref["p"])
    entropy = torch.cat(ref["entropy"])
    out: dict[str, Any] = {
        "s0": s0,
        "entropy_mean": float(entropy.mean()),
        "entropy_median": float(entropy.median()),
        "tail_mass_max": float(torch.cat(ref["tail"]).max()),
        "top_logit": _common.quantiles(torch.cat(ref["top"]), (0.0, 0.5, 1.0)),
        "p_target": _common.quantiles(p_target, (0.1, 0.5, 0.9)),
        "expected_bias_one_minus_p": float(torch.cat(ref["expected"]).mean()),
    }
    for name in parts:
        error = torch.cat(parts[name]["error"])
        ratio = torch.cat(parts[name]["one_minus_p"]) / one_minus_p64 - 1.0
        diff_sq, dot = sums[name]["diff_sq"], sums[name]["dot"]
        # |g|^2 = |g64 - change|^2 and g . g64 = |g64|^2 - change . g64
        grad_sq = grad_ref_sq - 2.0 * dot + diff_sq
        cosine = (grad_ref_sq - dot) / math.sqrt(grad_sq * grad_ref_sq)
        out[name] = {
            "logprob_error": _common.quantiles(error),
            "logprob_error_max": float(error.max()),
            "by_p_target": _binned(error, p_target),
            "grad_rel_l2": math.sqrt(diff_sq / grad_ref_sq),
            "grad_cosine": cosine,
            "grad_one_minus_cos": 1.0 - cosine,
            "bias_one_minus_p": float(ratio.mean()),
            "bias_one_minus_p_stderr": float(ratio.std() / math.sqrt(ratio.numel())),
        }
    return out


def _binned(error: torch.Tensor, p_target: torch.Tensor) -> dict[str, dict[str, Any]]:
    """Token count, median and p90 error per p_t bin."""
    out = {}
    for lo, hi in zip(P_BINS[:-1], P_BINS[1:], strict=True):
        inside = (p_target >= lo) & ((p_target < hi) if hi < 1.0 else (p_target <= hi))
        e = error[inside]
        out[f"{lo:g}-{hi:g}"] = {
            "tokens": int(inside.sum()),
            **(_common.quantiles(e, (0.5, 0.9)) if e.numel() else {"p50": None, "p90": None}),
        }
    return out


def is_reproduced(result: dict[str, Any]) -> bool:
    """Logprob errors at the scale of BF16 logit rounding, and a visible gradient change.

    A logit in [32, 64) moves by up to 0.125 when rounded; the finding holds if the p99
    per-token error is at least a quarter of that and the hidden-state gradient moves by 0.1%.
    """
    return result["logprob_error"]["p99"] >= 0.125 / 4 and result["grad_rel_l2"] >= 1e-3


def build_report() -> _common.Report:
    """Item 4: BF16 LM-head logits against an FP32 head, per-token and gradient errors."""
    result = measure()
    cited, fixed = result["cited"], result["fixed"]
    report = _common.Report(
        item="4",
        title="BF16 LM-head output logits (TrainerRank)",
        models="art/trainer_rank/_impl.py _local_logits_from_hidden_rows "
        "(L5948-L5971 at e2a406a48; 0.5.20 L5139-L5161) and the FP32 log_z/target logprob after it",
        setting={
            "head": f"synthetic, vocab {VOCAB}, hidden {HIDDEN} (Qwen3-4B's), BF16 weight and "
            "hidden rows, FP32 accumulation",
            "tokens": TOKENS,
            "candidates per token": f"{CANDIDATES}, top logit uniform on {list(TOP_LOGIT_RANGE)}, "
            "the others min(s_t * (running sum of Exp(1)), 30) below it, s_t = s0 * exp(N(0, 1))",
            "calibrated candidate entropy (mean)": (
                f"{TARGET_ENTROPY} nats, s0 = {result['s0']:.3g}"
            ),
            "achieved entropy over the vocabulary (mean / median)": (
                f"{result['entropy_mean']:.3g} / {result['entropy_median']:.3g} nats"
            ),
            "largest softmax share outside the top 32 logits": result["tail_mass_max"],
            "targets": "sampled from the float64 softmax at T = 1",
            "top logit (min/p50/max)": result["top_logit"],
            "p_target (p10/p50/p90)": result["p_target"],
            "seed": 0,
        },
    )

    def floor(value: float) -> float | str:
        return _common.floored(value, FIXED_FLOOR)

    for q in ("p50", "p90", "p99"):
        report.measure(
            f"logprob error {q}",
            cited["logprob_error"][q],
            "nats",
            audit=AUDIT[q],
            fixed=floor(fixed["logprob_error"][q]),
        )
    report.measure(
        "logprob error max",
        cited["logprob_error_max"],
        "nats",
        fixed=floor(fixed["logprob_error_max"]),
    )
    for name, b in cited["by_p_target"].items():
        report.measure(
            f"logprob error, p_t in {name} ({b['tokens']} tokens): p50 / p90",
            [b["p50"], b["p90"]] if b["tokens"] else "no tokens",
            "nats",
        )
    report.measure(
        "hidden-state gradient relative L2 change",
        cited["grad_rel_l2"],
        audit=AUDIT["grad_rel_l2"],
        fixed=floor(fixed["grad_rel_l2"]),
    )
    report.measure(
        "hidden-state gradient 1 - cosine",
        cited["grad_one_minus_cos"],
        audit=AUDIT["grad_one_minus_cos"],
        fixed=_common.floored(fixed["grad_one_minus_cos"], FIXED_FLOOR**2),
    )
    report.measure(
        "bias of 1 - p_t (mean relative change)",
        cited["bias_one_minus_p"],
        fixed=floor(fixed["bias_one_minus_p"]),
        note=f"standard error {cited['bias_one_minus_p_stderr']:.2g}",
    )
    report.measure(
        "expected bias of 1 - p_t (second order, from each logit's BF16 spacing)",
        result["expected_bias_one_minus_p"],
        audit=AUDIT["bias"],
        note="spacing**2/12 = 0.0052 for a confident token with competitors in [32, 64)",
    )
    report.note(
        "Synthetic head and hidden rows, not Qwen3-4B: the setting above is chosen to look like a "
        "language model's next-token distribution (stated entropy, sampled targets), and nothing "
        "was tuned toward the audit's figures; they are set beside these for size."
    )
    report.note(
        "To first order a token's error is (1 - p_t) d_t - sum_j p_j d_j over the other logits "
        "(d the roundings, up to 0.125 each in [32, 64)): it is small for confident tokens and "
        "largest where the mass is split, which the p_t bins show. The quantiles therefore "
        "depend on how many uncertain tokens there are, i.e. on the entropy."
    )
    report.note(
        "The gradient change is larger here than the audit's 1.1%. For a token split between t "
        "and a competitor c the relative change of its gradient is about p_t * |d_t - d_c|; "
        "here the non-target mass sits on at most 32 candidates with nothing between them and "
        "the bulk, so less of it averages out than over a real model's long tail. Not checked: "
        "what a real model's tail does to this figure."
    )
    report.note(
        "The per-token bias over 294 tokens is noisy (see its standard error); the expected bias "
        "is the noise-free figure to set beside the audit's."
    )
    report.reproduced = is_reproduced(cited) and not is_reproduced(fixed)
    return report


def main() -> int:
    return _common.run(build_report)


if __name__ == "__main__":
    raise SystemExit(main())
