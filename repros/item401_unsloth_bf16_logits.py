"""Follow-up 401 (artbot's own, found while checking the fix for #1109, and what it means for
audit item 4): ART's default local backend, Unsloth, still makes its logits in BF16.

Models ``_calculate_logprobs`` of ART's ``art/unsloth/train.py`` as released in openpipe-art
0.5.21 and 0.5.23 (lines 638-677): line 659 casts the LM head to the hidden states' dtype (BF16
in training), and line 665 is ``chunk_logits = torch.matmul(chunk_hs, lm_head_t).float()``: the
fix for #1109 (0.5.20's line 663 had no ``.float()``) upcasts the logits *after* a BF16 matmul,
so each logit is already rounded to BF16 (spacing 0.25 at 32-64) before the FP32 log-softmax.
That is audit item 4's rounding on ART's default backend; item 4 names TrainerRank only.

What is measured: log-probabilities of random target tokens from BF16 hidden states and a BF16
LM head whose logits reach about 58 (hidden 256, vocabulary 4096, 64 positions, chunks of 32),
against the log-softmax of FP32 logits from the *same* BF16 operands: the per-token |error| at
p50, p90 and its maximum, in nats. The finding holds when the p90 error exceeds 1e-3 nats (the
finding's expected bound: FP16 operands, whose logits are rounded finer than BF16's but still
rounded, give 0.014 and must not pass for a fix). The suggested fix, applied beside it: the
matmul in FP32 (``chunk_hs.float() @ lm_head_t.float()``).

Assumptions: random operands, not a model's (the rounding depends on the logits' size, not their
source); CPU matmul (a GPU's BF16 GEMM accumulates in FP32 and rounds its output the same way).
``check_art`` runs ART's own ``_calculate_logprobs``, taken from the release's source with
``ast`` (its module imports Unsloth's training stack, which is not installed here).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _art_logprobs  # noqa: E402
import _common  # noqa: E402
import _domain  # noqa: E402
import _evidence  # noqa: E402
import _simpler  # noqa: E402

HIDDEN, VOCAB, POSITIONS, CHUNK = 256, 4096, 64, 32
THRESHOLD = 1e-3  # nats at p90: the finding's expected bound


def calculate_logprobs(
    lm_head_t: torch.Tensor,
    hidden_states: torch.Tensor,
    next_input_ids: torch.Tensor,
    chunk_size: int,
    *,
    fp32_matmul: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """0.5.21's lines 659-668 (log-probabilities only), or with the matmul in FP32."""
    lm_head_t = lm_head_t.to(hidden_states.dtype)
    out = torch.empty(next_input_ids.shape, dtype=torch.float32)
    for i in range(0, hidden_states.shape[1], chunk_size):
        chunk_hs = hidden_states[:, i : i + chunk_size, :]
        if fp32_matmul:
            chunk_logits = torch.matmul(chunk_hs.float(), lm_head_t.float())
        else:
            chunk_logits = torch.matmul(chunk_hs, lm_head_t).float()
        chunk_log_probs = torch.log_softmax(chunk_logits, dim=-1)
        ids = next_input_ids[:, i : i + chunk_size].unsqueeze(-1)
        out[:, i : i + chunk_size] = torch.gather(chunk_log_probs, -1, ids).squeeze(-1)
    return out, out


def operands() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    hidden = torch.randn(1, POSITIONS, HIDDEN, generator=gen).to(torch.bfloat16)
    head = (torch.randn(HIDDEN, VOCAB, generator=gen) * 0.8).to(torch.bfloat16)
    ids = torch.randint(0, VOCAB, (1, POSITIONS), generator=gen)
    return hidden, head, ids


def measure(impl: Callable[..., Any] | None = None) -> dict[str, float]:
    """|error| quantiles of ``impl``'s logprobs against FP32 logits of the same BF16 operands."""
    impl = impl or calculate_logprobs
    hidden, head, ids = operands()
    logprobs, _ = impl(head, hidden, ids, CHUNK)
    logits = hidden.float() @ head.float()
    reference = torch.log_softmax(logits, -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    err = (logprobs.float() - reference).abs().flatten()
    return {
        "p50": float(err.quantile(0.5)),
        "p90": float(err.quantile(0.9)),
        "max": float(err.max()),
        "logit_absmax": float(logits.abs().max()),
    }


def rounds(measured: dict[str, float]) -> bool:
    return measured["p90"] > THRESHOLD


def build_report() -> _common.Report:
    """Follow-up 401: Unsloth's logits from a BF16 matmul."""
    released = measure()
    fixed = measure(lambda *a: calculate_logprobs(*a, fp32_matmul=True))
    report = _common.Report(
        item="401",
        title="The default Unsloth backend makes its logits in BF16 (item 4 applies there too)",
        models="art/unsloth/train.py _calculate_logprobs as released in 0.5.21 and 0.5.23 "
        "(L638-L677; the BF16 matmul at L665); follows audit item 4",
        setting={
            "operands": f"BF16 hidden [1, {POSITIONS}, {HIDDEN}], BF16 head [{HIDDEN}, {VOCAB}]",
            "logits |max|": round(released["logit_absmax"], 1),
            "chunk_size": CHUNK,
            "fix": "the matmul in FP32",
        },
    )
    for q in ("p50", "p90", "max"):
        report.measure(
            f"logprob |error| {q}", round(released[q], 4), "nats", fixed=round(fixed[q], 6)
        )
    report.claim("bf16-logits-on-unsloth", rounds(released))
    return report


# The split (issue #53): artbot draws the check's inputs (the edges, then LOGITS_SAMPLES draws
# with a seed of its own) and judges what ART's function returned on each
# (``_art_logprobs.logits_judge``: the float64 product and log-softmax of the same operands, no
# ART) in its own process.
ORACLES = {
    _art_logprobs.LOGITS_CLAIM: _domain.Oracle(
        judge=_art_logprobs.logits_judge,
        edges=_art_logprobs.logits_edges,
        sample=_art_logprobs.logits_sample,
        draws=_art_logprobs.LOGITS_SAMPLES,
    )
}


def check_art(art: Any) -> dict[str, Any]:
    """ART's own ``_calculate_logprobs`` (``unsloth/train.py`` imported whole, Unsloth's training
    stack stood in for where absent: ``_art_logprobs.load``; entered at its caller
    ``calculate_logprobs`` as ``compute_loss`` calls it) searched over the claim's
    domain (``_art_logprobs.LOGITS_COVERS``; artbot's inputs when it sent a plan). Reproduced:
    on some input the log-probabilities (or their gradients) are not those of FP32-accurate
    logits of the operands, against a float64 oracle; the first such input is shrunk and shown.
    Fixed: none found. artbot judges what was measured again, outside this process."""
    found, line = _art_logprobs.search_logits(art)
    detail = f"{art.name}/unsloth/train.py:{line} _calculate_logprobs: " + _simpler.said(found)
    at = [
        _evidence.lines(art, "unsloth/train.py", "lm_head_t = lm_head_t.to(hidden_states.dtype)"),
        _evidence.lines(
            art,
            "unsloth/train.py",
            "chunk_logits = torch.matmul(chunk_hs, lm_head_t).float()  # [B, chunk_size, V]",
        ),
    ]
    claim = _evidence.claim(not found.holds, detail, method="ran", at=at, domain=found.domain())
    return _evidence.one_claim(
        _art_logprobs.LOGITS_CLAIM,
        claim,
        f"{art.name}/unsloth/train.py:_calculate_logprobs (the module imported whole, run from "
        "its caller calculate_logprobs, as compute_loss calls it)",
    )


if __name__ == "__main__":
    raise SystemExit(_common.run(build_report))
