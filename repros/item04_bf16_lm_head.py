"""Item 4: TrainerRank's LM head returns BF16 logits; everything after it is FP32.

Models ``TrainerRank._local_logits_from_hidden_rows`` in ``art/trainer_rank/_impl.py`` (lines
5948-5971 at e2a406a48; lines 5139-5162 in openpipe-art 0.5.20) and what consumes its output:
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

Tail heads, beside it: the current head has no tail (its mass beyond the 32 candidates is at
most 7e-10). A tail head keeps each token's 32 candidates (the same draws) with mass 1 - m and
gives the other 32,736 ids a Zipf(1) tail of mass m (q_k proportional to 1/k, ids in random
order); s0 is recalibrated so the mean entropy over the vocabulary stays 0.6 nats. Its logits
are set directly in FP32 (a vocabulary-wide profile is not the image of one hidden row), so
only the BF16 store is modelled; m = 1% is the main one, 3% shows the sensitivity. The
hidden-row gradient is taken over each token's 128 most probable ids, with the part left out
bounded by the triangle inequality and printed.

Every statistical figure is printed with its standard error over the tokens (order
statistics for quantiles, delete-one jackknife for the gradient figures).

Verdict: the claim is "about 0.1 nats of per-token logprob noise" (audit p90 0.075, p99
0.13). It is reproduced when the BF16 head's p90 and p99 each lie within a factor of 2 of
the audit's on both the head without a tail and the 1% tail head, and the FP32 head's do not.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _art_head  # noqa: E402
import _common  # noqa: E402
import _domain  # noqa: E402
import _evidence  # noqa: E402
import _head_errors  # noqa: E402

VOCAB = 32_768
HIDDEN = 2560
TOKENS = 294
CANDIDATES = 32
TARGET_ENTROPY = 0.6  # nats, over the candidates; s0 is solved for it
TOP_LOGIT_RANGE = (35.0, 47.0)
# A candidate more than 30 nats below the top has a softmax share under 1e-13: held there, so a
# confident token's candidates stay at the top of the bulk instead of far below it.
MAX_GAP = 30.0
# Tail heads: the same 32 candidates per token holding 1 - m, a Zipf(1) tail over the other
# 32,736 ids holding m; the main one has m = 1%, the others show the sensitivity to the tail.
TAIL_MASS = 0.01
TAIL_MASSES = (0.01, 0.03)
CHUNK = 64  # tokens per head chunk, to keep the float64 [chunk, vocab] tensors small
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


def _draws(gen: torch.Generator, tokens: int) -> dict[str, torch.Tensor]:
    """Per-token candidate ids, top logit, gaps (running sums of Exp(1)) and scale spread."""
    ids = torch.stack([torch.randperm(VOCAB, generator=gen)[:CANDIDATES] for _ in range(tokens)])
    top = TOP_LOGIT_RANGE[0] + (TOP_LOGIT_RANGE[1] - TOP_LOGIT_RANGE[0]) * torch.rand(
        tokens, generator=gen
    )
    steps = -torch.log(torch.rand(tokens, CANDIDATES - 1, generator=gen))  # Exp(1)
    gaps = torch.cat([torch.zeros(tokens, 1), steps.cumsum(dim=1)], dim=1)
    spread = torch.exp(torch.randn(tokens, generator=gen))
    return {"ids": ids, "top": top, "gaps": gaps, "spread": spread}


def make_head(seed: int = 0, tokens: int = TOKENS) -> tuple[torch.Tensor, torch.Tensor, float]:
    """BF16-valued head weight [V, H], hidden rows [T, H] (held in FP32), and s0."""
    weight, hidden, s0, _ = _head_and_draws(seed, tokens)
    return weight, hidden, s0


def _head_and_draws(
    seed: int, tokens: int
) -> tuple[torch.Tensor, torch.Tensor, float, dict[str, torch.Tensor]]:
    gen = _common.seed_everything(seed)
    weight = _common.to_bf16(torch.randn(VOCAB, HIDDEN, generator=gen) / math.sqrt(HIDDEN))
    d = _draws(gen, tokens)
    s0 = calibrate_scale(d["gaps"], d["spread"], TARGET_ENTROPY)
    wanted = d["top"][:, None] - ((s0 * d["spread"])[:, None] * d["gaps"]).clamp(max=MAX_GAP)
    rows = weight[d["ids"]].double()  # [T, C, H]
    # Least-norm h with rows @ h = wanted: h = rows^T (rows rows^T)^-1 wanted.
    gram = rows @ rows.transpose(1, 2)
    coef = torch.linalg.solve(gram, wanted.double()[..., None])
    hidden = (rows.transpose(1, 2) @ coef).squeeze(-1).float()
    return weight, _common.to_bf16(hidden), s0, d


def _zipf_tail_logprobs() -> tuple[torch.Tensor, float]:
    """log q_k of the Zipf(1) tail over ranks 33..V (q_k proportional to 1/(k - 32)), and its
    entropy in nats."""
    ranks = torch.arange(1, VOCAB - CANDIDATES + 1, dtype=torch.float64)
    logq = -torch.log(ranks) - torch.log(torch.reciprocal(ranks).sum())
    return logq, float(-(logq.exp() * logq).sum())


def tail_head_scale(spread: torch.Tensor, gaps: torch.Tensor, tail_mass: float) -> float:
    """s0 for the tail head: the mean entropy over the whole vocabulary is TARGET_ENTROPY.

    A mixture of the head (mass 1 - m) and the tail (mass m) has entropy
    (1 - m) H_head + m H_tail + h(m), h the binary entropy; solve for the head's share.
    """
    _, tail_entropy = _zipf_tail_logprobs()
    m = tail_mass
    binary = -m * math.log(m) - (1 - m) * math.log1p(-m)
    head_target = (TARGET_ENTROPY - m * tail_entropy - binary) / (1 - m)
    if head_target <= 0:
        raise ValueError(f"a tail of mass {m} alone exceeds {TARGET_ENTROPY} nats")
    return calibrate_scale(gaps, spread, head_target)


def _tail_chunks(draws: dict[str, torch.Tensor], s0: float, tail_mass: float, seed: int):  # type: ignore[no-untyped-def]
    """The tail head, chunk by chunk: (FP32 logits as the GEMM accumulates them, float64 of the
    same). The current head's per-token draws (top logit, gaps, spread) with scale ``s0``, the
    32 candidates holding 1 - tail_mass and the other V - 32 ids a Zipf(1) tail holding
    tail_mass, ranks assigned to ids at random. The logits are set directly: a vocabulary-wide
    profile is not the image of one 2560-wide hidden row, so only the BF16 store is modelled."""
    logq, _ = _zipf_tail_logprobs()
    scaled = -((s0 * draws["spread"])[:, None] * draws["gaps"]).clamp(max=MAX_GAP).double()
    head = torch.log_softmax(scaled, dim=1) + math.log1p(-tail_mass)
    tail = math.log(tail_mass) + logq
    order = torch.Generator().manual_seed(seed + 2)
    for start in range(0, head.shape[0], CHUNK):
        h = head[start : start + CHUNK]
        ranked = torch.cat([h, tail.expand(h.shape[0], -1)], dim=1)
        ranked = draws["top"][start : start + CHUNK, None].double() + ranked - h[:, :1]
        perm = torch.stack([torch.randperm(VOCAB, generator=order) for _ in range(h.shape[0])])
        logits32 = torch.empty_like(ranked).scatter_(1, perm, ranked).float()
        yield logits32.double(), logits32


def _current_chunks(weight: torch.Tensor, hidden: torch.Tensor):  # type: ignore[no-untyped-def]
    """The current head, chunk by chunk: (FP32 GEMM output, float64 GEMM of the same rows)."""
    weight64 = weight.double()
    for start in range(0, hidden.shape[0], CHUNK):
        h = hidden[start : start + CHUNK]
        yield h.double() @ weight64.T, h @ weight.T


def measure(
    seed: int = 0, tokens: int = TOKENS, tail_masses: tuple[float, ...] = TAIL_MASSES
) -> dict[str, Any]:
    """The current head (``cited``/``fixed`` at the top level) and the tail heads (``tails``,
    by tail mass, BF16 side only: an FP32 store of logits set in FP32 is the reference)."""
    weight, hidden, s0, draws = _head_and_draws(seed, tokens)
    out = _head_errors.head_errors(_current_chunks(weight, hidden), weight, seed)
    out["s0"] = s0
    out["tails"] = {}
    for mass in tail_masses:
        tail_s0 = tail_head_scale(draws["spread"], draws["gaps"], mass)
        chunks = _tail_chunks(draws, tail_s0, mass, seed)
        out["tails"][mass] = {
            "s0": tail_s0,
            **_head_errors.head_errors(chunks, weight, seed, fixed=False),
        }
    return out


# The claim: "about 0.1 nats of per-token logprob noise", the audit's p90 0.075 and p99 0.13.
# Within a factor of 2 of both on a head that is not tuned to them tests the size claimed; an
# FP32 head (errors ~1e-6) and a head with BF16 noise ten times smaller both fail it.
CLAIM_P90 = (0.075 / 2, 0.075 * 2)
CLAIM_P99 = (0.13 / 2, 0.13 * 2)


def is_reproduced(result: dict[str, Any]) -> bool:
    """p90 and p99 of the per-token logprob error each within a factor 2 of the audit's."""
    p90, p99 = result["logprob_error"]["p90"], result["logprob_error"]["p99"]
    return CLAIM_P90[0] <= p90 <= CLAIM_P90[1] and CLAIM_P99[0] <= p99 <= CLAIM_P99[1]


def _claim_range(result: dict[str, Any]) -> str:
    p90, p99 = result["logprob_error"]["p90"], result["logprob_error"]["p99"]
    ok90 = CLAIM_P90[0] <= p90 <= CLAIM_P90[1]
    ok99 = CLAIM_P99[0] <= p99 <= CLAIM_P99[1]
    return f"p90 {'inside' if ok90 else 'outside'}, p99 {'inside' if ok99 else 'outside'}"


def build_report() -> _common.Report:
    """Item 4: BF16 LM-head logits against an FP32 head, per-token and gradient errors."""
    result = measure()
    cited, fixed = result["cited"], result["fixed"]
    main_tail = result["tails"][TAIL_MASS]
    _, tail_entropy = _zipf_tail_logprobs()
    report = _common.Report(
        item="4",
        title="BF16 LM-head output logits (TrainerRank)",
        models="art/trainer_rank/_impl.py _local_logits_from_hidden_rows "
        "(L5948-L5971 at e2a406a48; 0.5.20 L5139-L5162, 0.5.21 L4849-L4872, 0.5.23 "
        "L4857-L4880) and the FP32 log_z/target logprob after it",
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
            "tail heads": "the same tokens' 32 candidates holding 1 - m and a Zipf(1) tail "
            f"(q_k proportional to 1/k, entropy {tail_entropy:.3g} nats) over the other "
            f"{VOCAB - CANDIDATES} ids holding m, s0 recalibrated so the mean entropy over the "
            f"vocabulary stays {TARGET_ENTROPY} nats; logits set directly in FP32",
            "tail head s0, by m": {f"{m:g}": round(t["s0"], 3) for m, t in result["tails"].items()},
            "targets": "sampled from the float64 softmax at T = 1",
            "top logit (min/p50/max)": result["top_logit"],
            "p_target (p10/p50/p90)": result["p_target"],
            "gradient": f"hidden-row gradient over each token's {_head_errors.GRAD_IDS} most "
            "probable ids; the part left out is bounded (triangle inequality) and shown beside "
            "the figure",
            "figures": "a ± is one standard error over the tokens (quantiles: order statistics; "
            "gradient: delete-one jackknife)",
            "seed": 0,
        },
    )

    def floor(value: float) -> float | str:
        return _common.floored(value, FIXED_FLOOR)

    est = cited["logprob_error_est"]
    for q in ("p50", "p90", "p99"):
        report.measure(
            f"logprob error {q}",
            est[q],
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
            b["est"] if b["est"] else "too few tokens",
            "nats",
        )
    report.measure(
        "hidden-state gradient relative L2 change",
        cited["grad_rel_l2_est"],
        audit=AUDIT["grad_rel_l2"],
        fixed=floor(fixed["grad_rel_l2"]),
    )
    report.measure(
        "hidden-state gradient 1 - cosine",
        cited["grad_one_minus_cos_est"],
        audit=AUDIT["grad_one_minus_cos"],
        fixed=_common.floored(fixed["grad_one_minus_cos"], FIXED_FLOOR**2),
    )
    report.measure(
        "bias of 1 - p_t (mean relative change)",
        cited["bias_est"],
        fixed=floor(fixed["bias_one_minus_p"]),
    )
    report.measure(
        "expected bias of 1 - p_t (second order, from each logit's BF16 spacing)",
        result["expected_bias_est"],
        audit=AUDIT["bias"],
        note="spacing**2/12 = 0.0052 for a confident token with competitors in [32, 64)",
    )
    for mass, tail in result["tails"].items():
        c = tail["cited"]
        label = f"tail head, m = {mass:g}"
        report.measure(
            f"{label}: entropy over the vocabulary (mean), largest share outside the top 32",
            [round(tail["entropy_mean"], 3), tail["tail_mass_max"]],
        )
        report.measure(
            f"{label}: logprob error p90 / p99",
            [c["logprob_error_est"]["p90"], c["logprob_error_est"]["p99"]],
            "nats",
            audit="0.075 / 0.13 nats",
        )
        report.measure(
            f"{label}: hidden-state gradient relative L2 change",
            c["grad_rel_l2_est"],
            audit=AUDIT["grad_rel_l2"],
            note=f"left out: {_common.upper_bound(c['grad_change_left_out'])} of the change, "
            f"{_common.upper_bound(tail['grad_ref_left_out'])} of the gradient",
        )
        report.measure(f"{label}: bias of 1 - p_t", c["bias_est"])
    main = main_tail["cited"]
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
    tails = "; ".join(
        f"m = {m:g}: p90 {t['cited']['logprob_error_est']['p90']}, "
        f"p99 {t['cited']['logprob_error_est']['p99']}, gradient "
        f"{t['cited']['grad_rel_l2_est']}"
        for m, t in result["tails"].items()
    )
    report.note(
        "Sensitivity to the tail, at the same mean entropy: no tail (share beyond 32 at most "
        f"{result['tail_mass_max']:.1g}): p90 {est['p90']}, p99 {est['p99']}, gradient "
        f"{cited['grad_rel_l2_est']}; {tails}. A tail takes entropy from the head (s0 above), "
        "so at the same mean entropy more tokens are confident. What a real model's tail does "
        "is not checked; the heads here range from no tail to 3% of the mass in one."
    )
    report.note(
        "Verdict: the claim is about 0.1 nats of per-token noise (audit: p90 0.075, p99 0.13); "
        "it is reproduced when the BF16 head's p90 and p99 each lie within a factor of 2 of "
        f"the audit's ([{CLAIM_P90[0]:g}, {CLAIM_P90[1]:g}] and [{CLAIM_P99[0]:g}, "
        f"{CLAIM_P99[1]:g}] nats) on both the head without a tail and the m = {TAIL_MASS:g} "
        f"tail head ({_claim_range(cited)}; {_claim_range(main)}), and the FP32 head's are not."
    )
    holds = is_reproduced(cited) and is_reproduced(main) and not is_reproduced(fixed)
    report.claim("bf16-logit-rounding-noise", holds)
    report.reproduced = holds
    return report


# The split (issue #53): artbot draws the check's inputs (the edges, then SAMPLES draws with a
# seed of its own) and judges what ART's head returned on each (``_art_head.judge``: the
# float64 product of the same operands, no ART) in its own process.
ORACLES = {
    _art_head.CLAIM: _domain.Oracle(
        judge=_art_head.judge,
        edges=_art_head.edges,
        sample=_art_head.sample,
        draws=_art_head.SAMPLES,
    )
}


def check_art(art: Any) -> dict[str, Any]:
    """Run TrainerRank's head in ``art`` on CPU over the claim's domain (``_art_head``, which
    states it and the stand-in output layer ART's ``_local_logits_from_hidden_rows`` is called
    around).

    Reproduced: on some input the logits ART returns carry more than FP32 rounding, or their
    gradient is wrong (the first such input is shrunk and shown). Fixed: the property holds on
    every input tried (artbot's inputs when it sent a plan; it judges what was measured again,
    outside this process). The noise's effect on log-probabilities at a real model's size is
    this script's measurement; the dtype of the model's weights is configuration.
    """
    claim = _art_head.CLAIM
    measured = _art_head.run(art)
    found = measured["found"]
    detail = (
        f"ran TrainerRank.{_art_head.ENTRY} -> {_art_head.METHOD} ({measured['where']}): "
        + _art_head.describe(measured)
    )
    at = [_evidence.block(art, "trainer_rank/_impl.py", measured["line"])]
    verdict = not found.holds
    return {
        "claims": {
            claim: _evidence.claim(verdict, detail, method="ran", at=at, domain=found.domain())
        },
        "detail": detail,
        "ran": [
            f"TrainerRank.{_art_head.ENTRY} (need_log_z off, no top-k) -> {_art_head.METHOD} "
            f"({measured['where']}; trainer_rank/_impl.py imported whole, run on an "
            "uninitialised TrainerRank)"
        ],
        "scope": "ART's head function run on CPU over dtypes, grad modes, tensor-parallel "
        "layouts (sequence parallelism as ART's provider sets it) and chunk/vocabulary sizes; "
        "the output layer is a stand-in that records its operands' dtypes and rounds the "
        "product once to them, as a GPU GEMM does; other stand-ins: "
        f"{', '.join(measured['stand_ins'])}; the per-token noise at a real model's size "
        "is this script's measurement",
    }


if __name__ == "__main__":
    raise SystemExit(_common.run(build_report))
