"""Item 1 (#1108): Transformer Engine's fused cross-entropy zeroes target gradients for p >= 0.998.

What ART runs (openpipe-art 0.5.20; the audit's commit e2a406a48 is in no release;
it lies between 0.5.20 and 0.5.21):
- ``art/megatron/provider.py`` L730-L731 sets ``cross_entropy_loss_fusion = True`` and
  ``cross_entropy_fusion_impl = "te"``; ``art/megatron/train.py`` L1398-L1403 and
  ``art/megatron/selective_lm_head.py`` ``forward_token_losses`` (L131-L179) get per-token losses
  from ``model(..., labels=...)``. Megatron then calls TE's
  ``parallel_cross_entropy(logits, labels, 0.0, False, tp_group)``: no label smoothing,
  ``reduce_loss=False``, on the BF16 logits of the output layer. The megatron runtime pins
  transformer-engine 2.11.0 (CUDA 12) / 2.14.1 (CUDA 13).
- In those TE versions ``transformer_engine/common/triton/cross_entropy.py`` does, per row:
  ``online_softmax_kernel`` finds the max m and the sum d of exp(x - m) in FP32, over blocks of
  min(32768, next_pow2(V)) logits; ``cross_entropy_kernel`` step 4 writes
  ``exp(x - m) / d`` for every column into the logits buffer, cast to the logits' dtype (BF16);
  step 6 loads the target's entry back from that BF16 buffer, adds -1 and stores it again; in
  backward ``element_mul_kernel`` multiplies the buffer by the per-token grad_output.
  (ART 0.5.21's ``art/megatron/te_cross_entropy.py`` patches exactly steps 4 and 6.)
So the target's gradient is ``bf16(p) - 1`` (Triton's FP32-to-BF16 casts round to nearest even,
its default). BF16 keeps 8 significant bits, so just below 1.0
(in [0.5, 1)) its values are 2**-8 apart; p rounds up to exactly 1.0 once 1 - p <= 2**-9 (the
midpoint 1 - 2**-9 ties to 1.0, whose significand is even), and the target gradient is then 0.
The threshold is p >= 1 - 2**-9 = 0.998046875. Below it the target gradient is still
quantized to multiples of 2**-8.

The fix (``fixed=True``) is what ART 0.5.21 patches in: form ``p - 1`` for the target in FP32 and
store once in the logits' dtype; ``fp32_store=True`` keeps the whole gradient in FP32 (newer TE
writes to an FP32 gradient buffer). Either removes the zeros.

What is measured, on rows of BF16 logits: which rows get an exactly-zero target gradient, the
smallest p (float64, from the same BF16 logits) with a zero and the largest with a non-zero
target gradient, set beside 1 - 2**-9 and the audit's 0.998; the relative error of the target
gradient against float64 -(1 - p). When transformer_engine and CUDA are present, the same rows
go through TE's own kernel and its zero pattern is compared (otherwise that check is skipped).

Assumptions: vocabulary 151,936 (Qwen3); 256 rows; other logits N(0, 2.5**2); the target logit
uniform on [35, 47); 1 - p set by three competing logits (random shares of 1 - p, each rounded
to BF16), log-uniform on [1e-5, 0.5] for half of the rows and on [2**-10.5, 2**-7.5] (around the
threshold) for the other half; grad_output = 1 per token (a summed SFT loss; any factor keeps a
zero at zero). Seed 0.
"""

from __future__ import annotations

import functools
import math
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _art_whole  # noqa: E402
import _common  # noqa: E402
import _domain  # noqa: E402
import _evidence  # noqa: E402
import _simpler  # noqa: E402
import _te_patch  # noqa: E402

VOCAB = 151_936
ROWS = 256
COMPETITORS = 3
CHUNK = 64
BLOCK = min(32768, 1 << (VOCAB - 1).bit_length())  # TE: min(MAX_FUSED_SIZE, next_pow2(V))
THRESHOLD = 1.0 - 2.0**-9  # p at or above which bf16(p) == 1.0
AUDIT_THRESHOLD = "p >= 0.998"


@functools.lru_cache(maxsize=1)
def make_logits(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """BF16 logits [ROWS, VOCAB] and target ids [ROWS] with 1 - p spread as described above.

    Cached: every variant is measured on the same draw. Do not modify the returned tensors.
    """
    gen = _common.seed_everything(seed)
    logits = 2.5 * torch.randn(ROWS, VOCAB, generator=gen)
    ids = torch.randperm(VOCAB, generator=gen)[: ROWS * (1 + COMPETITORS)].reshape(ROWS, -1)
    targets, competitors = ids[:, 0], ids[:, 1:]
    target_logit = _common.to_bf16(35.0 + 12.0 * torch.rand(ROWS, generator=gen))
    half = ROWS // 2
    log_q = torch.empty(ROWS)
    log_q[:half] = math.log(1e-5) + (math.log(0.5) - math.log(1e-5)) * torch.rand(
        half, generator=gen
    )
    low, high = -10.5 * math.log(2.0), -7.5 * math.log(2.0)
    log_q[half:] = low + (high - low) * torch.rand(ROWS - half, generator=gen)
    shares = torch.rand(ROWS, COMPETITORS, generator=gen) + 0.05
    shares = shares / shares.sum(dim=1, keepdim=True)
    # 1 - p = q means the others sum to q / (1 - q) of the target's exp(x_t).
    odds = log_q - torch.log1p(-log_q.exp())
    rows = torch.arange(ROWS)[:, None]
    logits[rows, competitors] = target_logit[:, None] + odds[:, None] + shares.log()
    logits[torch.arange(ROWS), targets] = target_logit
    return logits.bfloat16(), targets


def te_softmax_stats(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``online_softmax_kernel``: running max m and sum d of exp(x - m), FP32, block by block."""
    x = logits.float()
    m = torch.full((x.shape[0],), float("-inf"))
    d = torch.zeros(x.shape[0])
    for start in range(0, x.shape[1], BLOCK):
        block = x[:, start : start + BLOCK]
        m_new = torch.maximum(m, block.max(dim=1).values)
        d = d * torch.exp(m - m_new) + torch.exp(block - m_new[:, None]).sum(dim=1)
        m = m_new
    return m, d


def te_logit_grad(
    logits: torch.Tensor,
    targets: torch.Tensor,
    grad_output: torch.Tensor,
    *,
    fixed: bool = False,
    fp32_store: bool = False,
    stats: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """The gradient buffer TE leaves behind for BF16 ``logits`` (reduce_loss=False, no smoothing).

    ``fixed``: the target's -1 is added in FP32 before the single store (ART 0.5.21's patch).
    ``fp32_store``: the gradient buffer is FP32 (no BF16 store at all).
    ``stats``: ``te_softmax_stats(logits)``, when already computed.
    """
    m, d = te_softmax_stats(logits) if stats is None else stats
    rows = torch.arange(logits.shape[0])
    store = torch.float32 if fp32_store else logits.dtype
    probs = torch.exp(logits.float() - m[:, None]) / d[:, None]  # step 4, FP32
    if fixed or fp32_store:
        probs[rows, targets] -= 1.0
        grad = probs.to(store)
    else:
        grad = probs.to(store)  # step 4's store into the BF16 logits buffer
        reloaded = grad[rows, targets].float()  # step 6: X_y = tl.load(X_ptr + y)
        grad[rows, targets] = (reloaded - 1.0).to(store)  # X_y += -1; tl.store
    # element_mul_kernel: buffer * grad_output, computed in FP32, stored in the buffer's dtype.
    return (grad.float() * grad_output[:, None]).to(store)


def te_kernel_target_grad(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor | None:
    """The target gradients from TE's own kernel on CUDA, or None where TE or CUDA is missing."""
    if not torch.cuda.is_available():
        return None
    try:
        from transformer_engine.pytorch.cross_entropy import parallel_cross_entropy
    except ImportError:
        return None
    x = logits.cuda()[None].clone().requires_grad_(True)
    labels = targets.cuda()[None]
    loss = parallel_cross_entropy(x, labels, 0.0, False, None)  # Megatron's call
    loss.backward(torch.ones_like(loss))
    return x.grad[0, torch.arange(logits.shape[0], device="cuda"), labels[0]].float().cpu()


@functools.lru_cache(maxsize=1)
def _chunks(seed: int) -> tuple[tuple[torch.Tensor, torch.Tensor, torch.Tensor, Any], ...]:
    """Per chunk of rows: (logits, targets, 1 - p in float64, TE's softmax stats), the part of
    a measurement that every variant shares. Cached: the variants are measured on one draw."""
    logits, targets = make_logits(seed)
    out = []
    for start in range(0, ROWS, CHUNK):
        rows = slice(start, start + CHUNK)
        x, y = logits[rows], targets[rows]
        log_p = _common.log_softmax64(x).gather(1, y[:, None]).squeeze(1)
        out.append((x, y, -torch.expm1(log_p), te_softmax_stats(x)))
    return tuple(out)


def measure(fixed: bool = False, fp32_store: bool = False, seed: int = 0) -> dict[str, Any]:
    """Zero target gradients and their threshold in p, on the cited path or a fixed one."""
    one_minus_p, target_grad = [], []
    for x, y, q_chunk, stats in _chunks(seed):
        grad = te_logit_grad(
            x, y, torch.ones(x.shape[0]), fixed=fixed, fp32_store=fp32_store, stats=stats
        )
        one_minus_p.append(q_chunk)
        target_grad.append(grad.gather(1, y[:, None]).squeeze(1).double())
    q = torch.cat(one_minus_p)
    p = 1.0 - q
    grad = torch.cat(target_grad)
    zero = grad == 0
    rel_err = ((grad + q) / q).abs()  # exact target gradient of -log p: p - 1 = -q
    below = q > 2.0**-9
    return {
        "fixed": fixed,
        "fp32_store": fp32_store,
        "p": p.tolist(),
        "target_grad": grad.tolist(),
        "zero_rows": int(zero.sum()),
        "zero_rows_below_threshold": int((zero & below).sum()),
        "largest_1mp_with_zero_grad": float(q[zero].max()) if bool(zero.any()) else None,
        "smallest_1mp_with_nonzero_grad": float(q[~zero].min()) if bool((~zero).any()) else None,
        "rel_err_max_p_0.99_to_threshold": float(rel_err[(p > 0.99) & below].max()),
        "rel_err_median_p_below_0.99": float(rel_err[p <= 0.99].median()),
    }


def is_reproduced(result: dict[str, Any]) -> bool:
    """Target gradients are exactly zero for p from about 0.998 up (1 - p <= 0.002), as audited."""
    edge = result["largest_1mp_with_zero_grad"]
    return result["zero_rows"] > 0 and edge is not None and abs(edge - 0.002) < 5e-4


def build_report() -> _common.Report:
    """Item 1 (#1108): TE cross-entropy target gradients in BF16, emulated on CPU."""
    cited = measure()
    fixed = measure(fixed=True)
    fp32 = measure(fp32_store=True)
    report = _common.Report(
        item="1",
        title="#1108 Megatron backend: TE fused cross-entropy zeroes target gradients",
        models="art/megatron/provider.py L730-L731 as released in 0.5.20 "
        "(cross_entropy_fusion_impl='te') -> "
        "TE 2.11/2.14 parallel_cross_entropy, "
        "transformer_engine/common/triton/cross_entropy.py steps 4 and 6",
        setting={
            "vocab": VOCAB,
            "rows": ROWS,
            "softmax block": BLOCK,
            "p range (float64)": [min(cited["p"]), max(cited["p"])],
            "grad_output": 1.0,
            "seed": 0,
        },
    )
    report.measure(
        "rows with an exactly-zero target gradient",
        cited["zero_rows"],
        fixed=fixed["zero_rows"],
        note=f"FP32 gradient store: {fp32['zero_rows']}; rows with p < 1 - 2**-9 among the zeros: "
        f"{cited['zero_rows_below_threshold']}",
    )
    report.measure(
        "largest 1 - p with a zero target gradient",
        cited["largest_1mp_with_zero_grad"],
        audit=f"{AUDIT_THRESHOLD} (1 - p <= 0.002)",
        fixed=fixed["largest_1mp_with_zero_grad"],
        note=f"theory: 2**-9 = {2.0**-9}, i.e. p >= {THRESHOLD}",
    )
    report.measure(
        "smallest 1 - p with a non-zero target gradient",
        cited["smallest_1mp_with_nonzero_grad"],
        fixed=fixed["smallest_1mp_with_nonzero_grad"],
        note="theory: just above 2**-9",
    )
    report.measure(
        "max relative error of target gradients, 0.99 < p < 1 - 2**-9",
        cited["rel_err_max_p_0.99_to_threshold"],
        fixed=fixed["rel_err_max_p_0.99_to_threshold"],
        note="cited: bf16(p) - 1 is a multiple of 2**-8; fixed: one BF16 rounding, under 2**-8",
    )
    report.measure(
        "median relative error of target gradients, p <= 0.99",
        cited["rel_err_median_p_below_0.99"],
        fixed=fixed["rel_err_median_p_below_0.99"],
    )
    te_grad = te_kernel_target_grad(*make_logits(0))
    if te_grad is None:
        report.note("TE kernel check skipped: transformer_engine or CUDA is not available here.")
    else:
        te_zero = te_grad == 0
        emulated_zero = torch.tensor(cited["target_grad"]) == 0
        report.measure(
            "rows where TE's own kernel and this emulation disagree on a zero target gradient",
            int((te_zero != emulated_zero).sum()),
            note=f"TE's kernel zeroed {int(te_zero.sum())} rows",
        )
    report.reproduced = is_reproduced(cited) and not is_reproduced(fixed)
    report.claim("zeroed-target-gradient-near-one", report.reproduced)
    return report


CLAIM = "zeroed-target-gradient-near-one"
# ART's preparation of a model (prepare_provider_bundle) for each model-support handler that
# runs on a CPU (Qwen3 dense and MoE, Llama 3), in both of the training dtypes it takes.
FUSION_COVERS = (
    "prepare_provider_bundle run for Qwen/Qwen3-4B, Qwen/Qwen3-30B-A3B and "
    "meta-llama/Llama-3.1-8B (ART's qwen3_dense, qwen3_moe and llama3_dense handlers), "
    "torch_dtype bfloat16 and float16, after provider.py's import, with TE 2.14.0's "
    "cross_entropy_kernel source in a stand-in transformer_engine (pinned; what ART leaves "
    "there judged with ast in artbot's process)"
)
TARGET_STEP = "target term formed in FP32 before the one store, no separate target store"


def fusion_edges() -> list[dict[str, Any]]:
    return [{"model": m, "dtype": d} for m in _te_patch.HF_CONFIGS for d in ("bfloat16", "float16")]


def judge_fusion(case: dict[str, Any], raw: Any) -> Any:
    """artbot's half (pure; the kernel text is parsed with ``ast``, never run): with TE's fused
    cross-entropy on (``cross_entropy_loss_fusion`` and ``cross_entropy_fusion_impl == "te"``
    as ART's preparation left them), the kernel ART left must form the target's term in FP32
    before the one store, with no separate target store."""
    if not isinstance(raw, dict):
        return _domain.Failure(f"nothing measured ({str(raw)[:60]})", TARGET_STEP)
    if raw.get("import_error"):
        return _domain.Failure(
            f"importing provider.py {str(raw['import_error'])[:160]}", TARGET_STEP
        )
    if raw.get("fusion_impl") != "te" or not raw.get("loss_fusion"):
        return None  # Megatron does not call TE's kernel
    kernel, updates = raw.get("kernel"), raw.get("updates")
    if not isinstance(kernel, str | None) or not isinstance(updates, int):
        return _domain.Failure("no kernel source measured", TARGET_STEP)
    fixed, how = _te_patch.kernel_outcome(kernel, updates)
    return None if fixed else _domain.Failure(how[:200], TARGET_STEP)


ORACLES = {CLAIM: _domain.Oracle(judge=judge_fusion, edges=fusion_edges)}


def _run(art: Any) -> dict[str, Any]:
    """Per input, as one training process: provider.py imported whole with a fresh stand-in
    kernel in place, then ART's preparation of that model; measured: the fusion fields ART
    left on the provider, and the kernel source Triton holds after both (with the number of
    updates ART made). The detail shows the counterexample's process, or the first one's."""
    seen: dict[str, Any] = {}

    def measure(case: dict[str, Any]) -> dict[str, Any]:
        with (
            _art_whole.whole(art) as whole,
            _te_patch.imported(whole, "megatron/provider.py") as done,
        ):
            raw: dict[str, Any] = {"import_error": None if done.module else done.how}
            if done.module is not None:
                raw |= _te_patch.prepare(done.module, case["model"], case["dtype"])
            done.settle()  # what the kernel is after ART's preparation ran too
            assert done.kernel is not None
            src, updates = done.kernel.src, len(done.kernel.updates)
            raw |= {"kernel": src if updates else None, "updates": updates}
            if "done" not in seen or judge_fusion(case, raw) is not None:
                seen.update(done=done, set_at=raw.get("set_at"), stand_ins=whole.said())
        return raw

    edges = fusion_edges()
    found = _domain.search(
        covers=FUSION_COVERS,
        edges=edges,
        sample=lambda rng: edges[0],
        claim=CLAIM,
        channel=art,
        measure=measure,
        judge=judge_fusion,
        max_inputs=len(edges),
    )
    return {"found": found, **seen}


def check_art(art: Any) -> dict[str, Any]:
    """Is Transformer Engine's fused cross-entropy on ART's path, and does ART's training
    process patch its kernel? Both are run: ``megatron/provider.py`` is imported whole
    (``_art_whole``: Megatron stood in for) with a stand-in ``transformer_engine`` holding TE
    2.14.0's real ``cross_entropy_kernel`` source (``_te_patch``: pinned test data), so whatever
    the import runs (0.5.21's module-level ``patch_te_cross_entropy()``, through any alias,
    helper or loop) reaches the kernel or does not; then ART's ``prepare_provider_bundle`` runs
    for each model of :data:`FUSION_COVERS` on a stand-in Megatron-Bridge provider, and sets
    (or not) ``cross_entropy_fusion_impl``. What is measured (the fields, the kernel's text) is
    judged by :func:`judge_fusion`, here and again in artbot's process.
    Fixed when, for every input, TE's fusion is off or the kernel ART left forms the target
    gradient in FP32 before the one store; an early return, a patch that changes nothing,
    raises or does half of it is not. The size of the zero band without it is this script's
    model of TE's kernel; the kernel itself does not run here (no TE, no GPU)."""
    run = _run(art)
    found, done = run["found"], run["done"]
    hit = not found.holds
    te_on = [e for e in art.tape.get(CLAIM, []) if e["raw"].get("fusion_impl") == "te"]
    set_at = run.get("set_at")
    provider_py = str(art.package_dir / "megatron" / "provider.py")
    setting = set_at[1] if set_at and set_at[0] == provider_py else None
    te_at = f"L{setting} " if setting else ""
    hook = done.line
    touched = done.patch is not None or "raises" in done.how
    if not te_on:
        detail = f"TE's fused cross-entropy is not enabled by prepare_provider_bundle ({te_at})"
    elif not touched:
        detail = (
            f"TE's fused cross-entropy enabled ({te_at}by prepare_provider_bundle); importing "
            "provider.py and running that leaves TE's kernel as it was: the target gradient is "
            "bf16(p) - 1"
        )
    else:
        detail = (
            f"TE's fused cross-entropy enabled ({te_at}by prepare_provider_bundle); provider.py "
            + (f"(L{hook}) " if hook else "")
            + "patches TE's kernel, which "
            + done.how
        )
    detail += f"; {_simpler.said(found)}"
    at: list[dict[str, Any] | None]
    if setting:
        at = [_evidence.span(art, "megatron/provider.py", setting)]
    else:
        at = [_evidence.function(art, "megatron/provider.py", "prepare_provider_bundle")]
    fix: list[dict[str, Any] | None] = [None]
    if hook is not None:
        fix = [_evidence.span(art, "megatron/provider.py", hook, hook)]
    if done.patch is not None:
        file, first, last = done.patch
        rel = str(Path(file).relative_to(art.package_dir))
        fix.append(_evidence.span(art, rel, first, max(first, last), look_for=first))
    return {
        "claims": {
            CLAIM: _evidence.claim(
                hit, detail, method="ran", at=at, fix=fix if te_on else at, domain=found.domain()
            )
        },
        "detail": detail,
        "ran": [
            f"{art.name}/megatron/provider.py imported whole with TE 2.14.0's cross_entropy_kernel "
            "source in a stand-in transformer_engine (pinned; the kernel it is left with read with "
            "ast in artbot's process)",
            f"{art.name}/megatron/provider.py prepare_provider_bundle, run for 3 models on a "
            "stand-in Megatron-Bridge provider (the fusion setting it leaves)",
        ],
        "scope": "ART's provider imported whole, its patch of TE's kernel and its "
        "prepare_provider_bundle run on TE 2.14.0's kernel source (pinned test data; stand-ins: "
        f"{', '.join(run['stand_ins'])}; Megatron-Bridge's AutoBridge and provider); the "
        "preparation is run for ART's Qwen3 dense, Qwen3 MoE and Llama 3 handlers only: the "
        "others (Qwen3.5, Gemma 4, DeepSeek V4, GLM 5, GPT-OSS, Nemotron-H) call GPU packages "
        "stood in here, import ones not installed (einops, tilelang) or read model fields the "
        "stand-in provider does not carry; the zero band's size is this script's model (no TE "
        "or CUDA here)",
    }


if __name__ == "__main__":
    raise SystemExit(_common.run(build_report))
