"""Item 4's measurement of one LM head: per-token logprob errors and the hidden-row gradient
change of BF16-stored logits (and FP32 ones, the fix) against float64, with standard errors.

``repros/item04_bf16_lm_head.py`` builds the heads (the setting) and reports; this module
measures any head given chunk by chunk as (float64 logits, FP32 logits as the GEMM
accumulates them), modelling what TrainerRank does after the output layer:
``_vocab_parallel_log_z`` (``.float()``, row max, ``exp(x - max)`` summed in FP32) and
``_vocab_parallel_target_logprobs`` (``logits[label].float() - log_z``).
"""

from __future__ import annotations

import math
from typing import Any

import _common
import torch

# The hidden-row gradient is taken over each token's 128 most probable ids; the rest is bounded.
GRAD_IDS = 128
# The softmax share outside each token's 32 largest logits (its candidates) is reported.
TOP_SHARE = 32
P_BINS = (0.0, 0.5, 0.9, 0.99, 1.0)


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
    # frexp: |x| = m * 2**e with m in [0.5, 1); BF16 keeps 8 significant bits: spacing 2**(e-8).
    _, exponent = torch.frexp(logits64)
    var = torch.exp2((exponent - 8).double()).square() / 12.0
    p_t = probs64.gather(1, targets[:, None])
    # d2 p_t / d x_j2 = p_t p_j (2 p_j - 1) for j != t and p_t (1 - p_t)(1 - 2 p_t) for j = t.
    curvature = p_t * probs64 * (2.0 * probs64 - 1.0)
    curvature.scatter_(1, targets[:, None], p_t * (1.0 - p_t) * (1.0 - 2.0 * p_t))
    return -0.5 * (curvature * var).sum(dim=1) / (1.0 - p_t.squeeze(1))


def _variant_stats(
    logits: torch.Tensor,
    targets: torch.Tensor,
    logprob64: torch.Tensor,
    probs64: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """Per-chunk errors of one head variant (BF16 or FP32 logits) against float64, and the
    change of its softmax (p64 - p), from which the gradient change follows."""
    logprob = _logprobs_fp32(logits, targets).double()
    log_probs = _common.log_softmax64(logits)
    lp_exact = log_probs.gather(1, targets[:, None]).squeeze(1)
    return {
        "error": (logprob - logprob64).abs(),
        "one_minus_p": -torch.expm1(lp_exact),
        "dp": probs64 - log_probs.exp_(),
    }


def _hidden_grads(
    weight: torch.Tensor,
    max_row: float,
    targets: torch.Tensor,
    probs64: torch.Tensor,
    dps: list[torch.Tensor],
) -> tuple[torch.Tensor, list[torch.Tensor], torch.Tensor, list[torch.Tensor]]:
    """Hidden-row gradients over each token's GRAD_IDS most probable ids.

    grad = W[y] - p @ W and a head's change is (p64 - p) @ W; both are taken over the top
    GRAD_IDS ids of p64 (in FP32: the change only needs ~1e-7 relative accuracy). What is left
    out is bounded by the triangle inequality, |v_rest @ W_rest| <= |v_rest|_1 max_j |w_j|;
    returned per token for the reference and for each change.
    """
    top = probs64.topk(GRAD_IDS, dim=1).indices
    rows = weight[top]  # [T, K, H]

    def product(v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        kept = v.gather(1, top)
        rest = (v.abs().sum(dim=1) - kept.abs().sum(dim=1)).clamp_min(0.0)
        return torch.bmm(kept.float()[:, None, :], rows).squeeze(1), rest * max_row

    p_part, ref_rest = product(probs64)
    grad64 = weight[targets] - p_part
    changes, rests = zip(*(product(dp) for dp in dps), strict=True)
    return grad64, list(changes), ref_rest, list(rests)


def head_errors(chunks, weight: torch.Tensor, seed: int, fixed: bool = True) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Errors of the BF16-stored logits (``cited``) and, if ``fixed``, the FP32 ones (``fixed``)
    against float64, over the chunks of one head. Targets are sampled from the float64 softmax
    at T = 1, as the tokens of a sampled completion are."""
    sampler = torch.Generator().manual_seed(seed + 1)
    max_row = float(weight.norm(dim=1).max())
    names = ("cited", "fixed") if fixed else ("cited",)
    per: dict[str, dict[str, list[torch.Tensor]]] = {n: {} for n in names}
    ref: dict[str, list[torch.Tensor]] = {}

    def keep(store: dict[str, list[torch.Tensor]], **values: torch.Tensor) -> None:
        for key, value in values.items():
            store.setdefault(key, []).append(value)

    for logits64, logits32 in chunks:
        log_probs64 = _common.log_softmax64(logits64)
        probs64 = log_probs64.exp()
        # Inverse-CDF draw (torch.multinomial is 5x slower over 32k ids).
        cdf = probs64.cumsum(dim=1)
        u = torch.rand(cdf.shape[0], 1, generator=sampler, dtype=torch.float64) * cdf[:, -1:]
        y = torch.searchsorted(cdf, u).squeeze(1).clamp_max(cdf.shape[1] - 1)
        del cdf
        logprob64 = log_probs64.gather(1, y[:, None]).squeeze(1)
        keep(
            ref,
            entropy=-(probs64 * log_probs64).sum(dim=1),
            tail=1.0 - probs64.topk(TOP_SHARE, dim=1).values.sum(dim=1),
            one_minus_p=-torch.expm1(logprob64),
            p=logprob64.exp(),
            top=logits64.max(dim=-1).values,
            expected=_second_order_bias(logits64, probs64, y),
        )
        del logits64, log_probs64
        # A BF16 GEMM accumulates in FP32 and rounds once on the store; the fix keeps FP32.
        variants = {"cited": _common.to_bf16(logits32), "fixed": logits32}
        stats = {name: _variant_stats(variants[name], y, logprob64, probs64) for name in names}
        grad64, changes, ref_rest, rests = _hidden_grads(
            weight, max_row, y, probs64, [stats[name].pop("dp") for name in names]
        )
        grad64 = grad64.double()
        keep(ref, grad_sq=grad64.square().sum(dim=1), grad_rest=ref_rest)
        for name, change, rest in zip(names, changes, rests, strict=True):
            change = change.double()
            keep(
                per[name],
                diff_sq=change.square().sum(dim=1),
                dot=(change * grad64).sum(dim=1),
                change_rest=rest,
                **stats[name],
            )

    cat = {k: torch.cat(v) for k, v in ref.items()}
    out: dict[str, Any] = {
        "entropy_mean": float(cat["entropy"].mean()),
        "entropy_median": float(cat["entropy"].median()),
        "tail_mass_max": float(cat["tail"].max()),
        "tail_mass_mean": float(cat["tail"].mean()),
        "top_logit": _common.quantiles(cat["top"], (0.0, 0.5, 1.0)),
        "p_target": _common.quantiles(cat["p"], (0.1, 0.5, 0.9)),
        "expected_bias_one_minus_p": float(cat["expected"].mean()),
        "expected_bias_est": _common.mean_estimate(cat["expected"]),
        # Left out of the reference gradient (over the top GRAD_IDS ids), relative to its norm.
        "grad_ref_left_out": float(cat["grad_rest"].square().sum().sqrt())
        / float(cat["grad_sq"].sum().sqrt()),
    }
    for name in names:
        v = {k: torch.cat(x) for k, x in per[name].items()}
        error = v["error"]
        ratio = v["one_minus_p"] / cat["one_minus_p"] - 1.0
        # Per-token parts of |g64|^2, |change|^2 and change . g64, where
        # |g|^2 = |g64|^2 - 2 dot + |change|^2.
        parts = torch.stack([cat["grad_sq"], v["diff_sq"], v["dot"]], dim=1)
        rel = _common.jackknife(parts, lambda s: math.sqrt(s[1] / s[0]))
        one_minus_cos = _common.jackknife(
            parts, lambda s: 1.0 - (s[0] - s[2]) / math.sqrt((s[0] - 2 * s[2] + s[1]) * s[0])
        )
        bias = _common.mean_estimate(ratio)
        out[name] = {
            "logprob_error": _common.quantiles(error),
            "logprob_error_est": {
                f"p{round(q * 100)}": _common.quantile_estimate(error, q) for q in (0.5, 0.9, 0.99)
            },
            "logprob_error_max": float(error.max()),
            "by_p_target": _binned(error, cat["p"]),
            "grad_rel_l2": rel.value,
            "grad_rel_l2_est": rel,
            "grad_cosine": 1.0 - one_minus_cos.value,
            "grad_one_minus_cos": one_minus_cos.value,
            "grad_one_minus_cos_est": one_minus_cos,
            "bias_one_minus_p": bias.value,
            "bias_one_minus_p_stderr": bias.stderr,
            "bias_est": bias,
            "grad_change_left_out": float(v["change_rest"].square().sum().sqrt())
            / max(float(v["diff_sq"].sum().sqrt()), 1e-300),
        }
    return out


def _binned(error: torch.Tensor, p_target: torch.Tensor) -> dict[str, dict[str, Any]]:
    """Token count, median and p90 error (with standard errors) per p_t bin."""
    out = {}
    for lo, hi in zip(P_BINS[:-1], P_BINS[1:], strict=True):
        inside = (p_target >= lo) & ((p_target < hi) if hi < 1.0 else (p_target <= hi))
        e = error[inside]
        out[f"{lo:g}-{hi:g}"] = {
            "tokens": int(inside.sum()),
            **(_common.quantiles(e, (0.5, 0.9)) if e.numel() else {"p50": None, "p90": None}),
            "est": [_common.quantile_estimate(e, q) for q in (0.5, 0.9)] if e.numel() > 1 else [],
        }
    return out
