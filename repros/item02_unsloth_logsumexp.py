"""Item 2 (#1109): the Unsloth backend's BF16 logsumexp zeroes logprobs and target gradients.

Models ``art/unsloth/train.py`` L636-L687 (``_calculate_logprobs``, openpipe-art 0.5.20; the
audit links e2a406a48): the LM head is cast to the hidden states' dtype (L657), each chunk's
logits are ``matmul(hidden, lm_head_t)`` (L663), the target logit is gathered from them
(L664-L666), ``torch.logsumexp`` runs on them (L667), and the logprob
``selected - logsumexp`` is stored in a buffer of the hidden states' dtype (L646-L655, L668).
``calculate_logprobs`` (L600-L633) runs the model under ``autocast(dtype=bfloat16)`` and
calls ``_calculate_logprobs`` on its output after leaving the autocast block.

Why it zeroes: ``torch.logsumexp`` on a BF16 tensor is computed as BF16 operations: the max,
``exp(logit - max)``, their sum, its log, plus the max, each result stored in BF16 (the
script checks this bit for bit). With the target as the max logit ``x``, the sum is
``S = 1 + r`` (``r`` the others' mass relative to the target, ``p = 1 / (1 + r)``), stored in
steps of 2**-7 on [1, 2); the logsumexp is ``x + bf16(log S)`` rounded to BF16, which is
``x`` itself while ``bf16(log S)`` is at most half the BF16 spacing at ``x`` (ties to even).
Then the logprob ``x - logsumexp`` is exactly 0 and its backward
``1 - exp(x - logsumexp) = 1 - exp(0)`` is exactly 0 too. To first order the dead zone is
``p >= exp(-spacing(x) / 2)``, 0.8825 for logits in [32, 64) where the BF16 spacing is 0.25
(the audit's "about 0.88"); the 2**-7 step of the stored sum moves it to 0.8797.

Assumptions:

- The hidden states reach ``_calculate_logprobs`` in BF16 (the BF16 autocast dtype
  ``_get_dtype_for_autocasting`` picks for a BF16 model, L316-L344). The audit marks the GPU
  dtype as still to be confirmed; this script runs on CPU, where ``torch.logsumexp`` on a
  BF16 tensor also returns BF16.
- Logits are set directly: the LM head is the identity and each position's hidden state is
  the row of logits wanted, so the BF16 matmul reproduces them exactly and the gradient with
  respect to the hidden states is the gradient with respect to the logits. Every logit is a
  BF16 value, as a BF16 GEMM's output is.
- One target logit ``x`` per sweep, with 0-31 competitors at ``x - 4`` and 1-64 at
  ``x - 8`` (so every row has p < 1 - 3e-4) and the rest of the vocabulary 64 below; the
  target probability ``p`` of each row is computed in float64 from the BF16 logits used.
  The backward pass starts from ``sum(logprobs)``: the upstream scale does not change an
  exact zero.
- The suggested fix is the same computation with the logits upcast to FP32 before the
  gather and the logsumexp, and an FP32 logprob buffer.

Swappable: ``measure(impl=...)`` takes any function with the signature of ART's
``art.unsloth.train._calculate_logprobs(lm_head_t, hidden_states, next_input_ids,
chunk_size) -> (log_probs, entropy)``, including ART's own (importing that module needs
ART's training dependencies).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _art_logprobs  # noqa: E402
import _art_lse  # noqa: E402
import _common  # noqa: E402
import _domain  # noqa: E402
import _evidence  # noqa: E402
import _simpler  # noqa: E402

TARGET_LOGITS = (6.0, 12.0, 24.0, 40.0, 80.0)  # one per BF16 binade from [4, 8) to [64, 128)
VOCAB = 128
CHUNK = 1024  # ART's default logprob_calculation_chunk_size
NEAR = 4.0  # competitors at x - 4 carry e^-4 of the target's mass each
FAR = 8.0  # and at x - 8, e^-8: fine steps in p between the coarse ones
N_NEAR, N_FAR = 32, 64  # 32 * 64 = 2048 rows per sweep, two chunks of 1024
BACKGROUND = 64.0  # the rest of the vocabulary sits 64 below the target: e^-64, negligible

LogprobImpl = Callable[
    [torch.Tensor, torch.Tensor, torch.Tensor, int], tuple[torch.Tensor, torch.Tensor]
]


def _calculate_logprobs(
    lm_head_t: torch.Tensor,
    hidden_states: torch.Tensor,
    next_input_ids: torch.Tensor,
    chunk_size: int,
    *,
    upcast: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    batch, seq_len, _ = hidden_states.shape
    dtype = torch.float32 if upcast else hidden_states.dtype
    log_probs = torch.empty((batch, seq_len), dtype=dtype)
    entropy = torch.empty((batch, seq_len), dtype=dtype)
    lm_head_t = lm_head_t.to(hidden_states.dtype)
    for i in range(0, seq_len, chunk_size):
        logits = torch.matmul(hidden_states[:, i : i + chunk_size, :], lm_head_t)
        logits = logits.float() if upcast else logits
        ids = next_input_ids[:, i : i + chunk_size]
        selected = torch.gather(logits, dim=-1, index=ids.unsqueeze(-1)).squeeze(-1)
        lse = torch.logsumexp(logits, dim=-1)
        log_probs[:, i : i + chunk_size] = selected - lse
        full = logits - lse.unsqueeze(-1)
        entropy[:, i : i + chunk_size] = (-torch.exp(full) * full).sum(dim=-1)
    return log_probs, entropy


def calculate_logprobs_bf16(
    lm_head_t: torch.Tensor, hidden_states: torch.Tensor, next_input_ids: torch.Tensor, chunk: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Model of ``_calculate_logprobs`` (train.py L636-L687): everything in the hidden dtype."""
    return _calculate_logprobs(lm_head_t, hidden_states, next_input_ids, chunk, upcast=False)


def calculate_logprobs_fp32(
    lm_head_t: torch.Tensor, hidden_states: torch.Tensor, next_input_ids: torch.Tensor, chunk: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The suggested fix: the same steps with the BF16 logits upcast to FP32 first."""
    return _calculate_logprobs(lm_head_t, hidden_states, next_input_ids, chunk, upcast=True)


def sweep_logits(x: float) -> torch.Tensor:
    """[rows, VOCAB] BF16 logit rows: target x at index 0, competitors in every mix."""
    near = torch.arange(N_NEAR).repeat_interleave(N_FAR)
    far = torch.arange(1, N_FAR + 1).repeat(N_NEAR)
    col = torch.arange(VOCAB - 1)
    rest = torch.full((N_NEAR * N_FAR, VOCAB - 1), x - BACKGROUND)
    rest = torch.where(col < near[:, None], torch.tensor(x - NEAR), rest)
    is_far = (col >= near[:, None]) & (col < (near + far)[:, None])
    rest = torch.where(is_far, torch.tensor(x - FAR), rest)
    target = torch.full((N_NEAR * N_FAR, 1), x)
    return torch.cat([target, rest], dim=1).to(torch.bfloat16)


def first_order_threshold(
    x: float, spacing: Callable[[float], float] = _common.bf16_spacing
) -> float:
    """p from which -log p is below half the spacing at x, so x - log p rounds back to x."""
    return math.exp(-spacing(x) / 2)


def dead_zone_threshold(x: float) -> float:
    """p from which BF16 logsumexp returns x exactly, with the BF16 step of the stored sum.

    The sum S = 1 + r of exp(logit - x) is stored in BF16, steps of 2**-7 on [1, 2). S* is
    the largest such value with bf16(x + bf16(log S*)) == x; 1 + r rounds to S* or below
    while it is under the midpoint S* + 2**-8, so the dead zone is p > 1 / (S* + 2**-8)."""
    step = 2.0**-7  # BF16 spacing on [1, 2): 8 significant bits
    x32 = torch.tensor(x)
    s_star = max(
        1 + k * step
        for k in range(128)
        if _common.to_bf16(x32 + _common.to_bf16(torch.tensor(math.log(1 + k * step)))) == x32
    )
    return 1 / (s_star + step / 2)


def logsumexp_is_bf16_composite(logits: torch.Tensor) -> bool:
    """Whether torch.logsumexp on these BF16 rows equals max, exp, sum, log, add in BF16."""
    top = logits.amax(dim=-1, keepdim=True)
    composite = (logits - top).exp().sum(dim=-1).log().add(top.squeeze(-1))
    return torch.equal(torch.logsumexp(logits, dim=-1), composite)


def fp32_spacing(x: float) -> float:
    """Distance between adjacent FP32 values around |x| (24 significant bits)."""
    return 2.0 ** (math.floor(math.log2(abs(x))) - 23)


def run_sweep(x: float, impl: LogprobImpl) -> dict[str, Any]:
    """Logprobs and target gradients for every row of the sweep at target logit x."""
    logits = sweep_logits(x)
    rows = logits.shape[0]
    hidden = logits.unsqueeze(0).clone().requires_grad_(True)  # [1, rows, VOCAB]
    lm_head_t = torch.eye(VOCAB)  # ART casts it to the hidden dtype: BF16 identity, exact
    targets = torch.zeros((1, rows), dtype=torch.long)
    log_probs, _ = impl(lm_head_t, hidden, targets, CHUNK)
    log_probs.float().sum().backward()
    logprob = log_probs.detach().float()[0].to(torch.float64)
    target_grad = hidden.grad[0, :, 0].float().to(torch.float64)
    reference = _common.log_softmax64(logits.float())[:, 0]
    return {
        "p": reference.exp(),
        "logprob": logprob,
        "grad": target_grad,
        "ref": reference,
        "bf16_composite": logsumexp_is_bf16_composite(logits),
    }


def summarize(x: float, sweep: dict[str, Any], threshold: float) -> dict[str, Any]:
    """Where the zeros fall, next to the threshold derived from the spacing."""
    p, logprob, grad = sweep["p"], sweep["logprob"], sweep["grad"]
    zero = logprob == 0
    # Each stored exp(logit - x) is off by up to 2**-9 of itself, so 1 + r can land on the
    # other side of the midpoint for rows within that distance of it; those are not judged.
    r, r_star = 1 / p - 1, 1 / threshold - 1
    decided = (r - r_star).abs() > r * 2.0**-8
    predicted = p >= threshold
    return {
        "target_logit": x,
        "derived_threshold": threshold,
        "first_order_threshold": first_order_threshold(x),
        "logsumexp_is_bf16_composite": sweep["bf16_composite"],
        "rows": int(p.numel()),
        "zero_logprob_rows": int(zero.sum()),
        "lowest_p_with_zero_logprob": float(p[zero].min()) if bool(zero.any()) else None,
        "highest_p_with_nonzero_logprob": float(p[~zero].max()) if bool((~zero).any()) else None,
        "rows_judged": int(decided.sum()),
        "rows_disagreeing_with_derivation": int((zero != predicted)[decided].sum()),
        "zero_grad_iff_zero_logprob": bool(torch.equal(grad == 0, zero)),
        "max_abs_error_vs_float64": float((logprob - sweep["ref"]).abs().max()),
        "p_range": (float(p.min()), float(p.max())),
    }


def measure(impl: LogprobImpl = calculate_logprobs_bf16, *, fp32: bool = False):
    """Per target logit: the measured dead zone beside the one derived from the spacing.

    ``fp32=True`` judges the rows against the FP32 dead zone instead (for the fixed path).
    """
    return [
        summarize(
            x,
            run_sweep(x, impl),
            first_order_threshold(x, fp32_spacing) if fp32 else dead_zone_threshold(x),
        )
        for x in TARGET_LOGITS
    ]


def is_reproduced(rows: list[dict[str, Any]]) -> bool:
    """Zeros appear below p = 1, exactly where the BF16 spacing puts them, with zero gradients."""
    return all(
        r["zero_logprob_rows"] > 0
        and r["rows_disagreeing_with_derivation"] == 0
        and r["zero_grad_iff_zero_logprob"]
        and r["derived_threshold"] < 1.0
        for r in rows
    )


def build_report() -> _common.Report:
    """Item 2 (#1109): Unsloth BF16 logsumexp dead zone."""
    _common.seed_everything(0)
    cited = measure()
    fixed = measure(calculate_logprobs_fp32, fp32=True)
    report = _common.Report(
        item="2",
        title="Unsloth backend: BF16 logsumexp zeroes logprobs and target gradients",
        models="art/unsloth/train.py L636-L687 as released in 0.5.20 (_calculate_logprobs)",
        setting={
            "hidden states and logits dtype": "bfloat16 (autocast output, assumed)",
            "vocabulary": VOCAB,
            "rows per target logit": cited[0]["rows"],
            "chunk size": CHUNK,
            "target logits": list(TARGET_LOGITS),
            "p range swept": [round(min(r["p_range"][0] for r in cited), 4), 1.0],
        },
    )
    for r, f in zip(cited, fixed, strict=True):
        x = r["target_logit"]
        audit = "p >= about 0.88" if 32 <= x < 64 else None
        report.measure(
            f"x = {x:g} (BF16 spacing {_common.bf16_spacing(x):g}): p from which logprob is 0",
            _or_none(r["lowest_p_with_zero_logprob"]),
            fixed=_or_none(f["lowest_p_with_zero_logprob"]),
            audit=audit,
            note=(
                f"derived {r['derived_threshold']:.4f}, first order exp(-spacing/2) "
                f"{r['first_order_threshold']:.4f}; highest p with a non-zero logprob "
                f"{r['highest_p_with_nonzero_logprob']:.4f}; "
                f"{r['zero_logprob_rows']} of {r['rows']} rows zero"
            ),
        )
    report.measure(
        "rows where zero/non-zero disagrees with the spacing derivation",
        sum(r["rows_disagreeing_with_derivation"] for r in cited),
        fixed=sum(f["rows_disagreeing_with_derivation"] for f in fixed),
        note=(
            f"of {sum(r['rows_judged'] for r in cited)} rows judged; the rest lie within the "
            "BF16 rounding of the stored exps of the threshold; the fixed path is judged "
            "against the FP32 dead zone"
        ),
    )
    report.measure(
        "torch.logsumexp on BF16 equals max/exp/sum/log/add each stored in BF16",
        all(r["logsumexp_is_bf16_composite"] for r in cited),
        note="bit for bit, on every row swept",
    )
    report.measure(
        "target gradient is exactly 0 on exactly the rows whose logprob is 0",
        all(r["zero_grad_iff_zero_logprob"] for r in cited),
        fixed=all(f["zero_grad_iff_zero_logprob"] for f in fixed),
    )
    report.measure(
        "max |logprob - float64 log-softmax| over all rows",
        max(r["max_abs_error_vs_float64"] for r in cited),
        "nats",
        fixed=max(f["max_abs_error_vs_float64"] for f in fixed),
    )
    fp32_dead = first_order_threshold(40.0, fp32_spacing)
    report.note(
        f"With the FP32 logsumexp the dead zone moves to p >= exp(-spacing_fp32/2), "
        f"1 - {1 - fp32_dead:.1e} at x = 40, above every row swept."
    )
    report.note(
        "The GPU dtype is still to be confirmed: this runs the same operations on CPU with "
        "BF16 hidden states, which is what BF16 autocast hands to _calculate_logprobs."
    )
    report.reproduced = is_reproduced(cited)
    report.claim("zeroed-logprob-and-gradient", report.reproduced)
    if is_reproduced(fixed):
        report.note("the suggested fix did not remove the measured effect")
    return report


def _or_none(p: float | None) -> float | str:
    return "none in the sweep" if p is None else p


# The split (issue #53): artbot draws the check's inputs (the edges, then SAMPLES draws with a
# seed of its own) and judges what ART's function returned on each (``_art_lse.judge``: the
# float64 log-softmax of the same logits, no ART) in its own process.
ORACLES = {
    _art_lse.CLAIM: _domain.Oracle(
        judge=_art_lse.judge, edges=_art_lse.edges, sample=_art_lse.sample, draws=_art_lse.SAMPLES
    )
}


def check_art(art: Any) -> dict[str, Any]:
    """ART's own ``_calculate_logprobs`` (its module, ``unsloth/train.py``, imported whole, with
    Unsloth's training stack stood in for where absent: ``_art_logprobs.load``; entered at its
    caller ``calculate_logprobs`` as ``compute_loss`` calls it) searched over
    the claim's domain (``_art_lse.COVERS``; artbot's inputs when it sent a plan). The property:
    every logprob equals log p (float64 log-softmax of the same logits) to FP32 accuracy and the
    gradient reaching the hidden states is onehot - p to the accuracy of their dtype, on 24 rows
    of each input spread over p. Reproduced: an input where either fails (shrunk and shown);
    fixed: none found. artbot judges what was measured again, outside this process."""
    found, line = _art_lse.search(art)
    detail = "ran _calculate_logprobs: " + _simpler.said(found)

    at = [_evidence.block(art, "unsloth/train.py", line)]
    fix = [
        _evidence.lines(
            art,
            "unsloth/train.py",
            "chunk_logits = torch.matmul(chunk_hs, lm_head_t).float()  # [B, chunk_size, V]",
        )
    ]
    return {
        "claims": {
            _art_lse.CLAIM: _evidence.claim(
                not found.holds, detail, method="ran", at=at, fix=fix, domain=found.domain()
            )
        },
        "detail": detail,
        "ran": [
            f"{art.name}/unsloth/train.py:{line} _calculate_logprobs (module imported whole, run "
            "from its caller calculate_logprobs, as compute_loss calls it)"
        ],
        "scope": "ART's calculate_logprobs and _calculate_logprobs run with BF16 hidden states "
        "(the autocast dtype on GPU is assumed, as the audit does); the model, trainer and "
        "adapters around them stood in for; " + _art_logprobs.SCOPE,
        "method": "ran",
    }


if __name__ == "__main__":
    raise SystemExit(_common.run(build_report))
