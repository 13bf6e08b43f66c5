"""Item 2's check: ART's Unsloth ``_calculate_logprobs`` searched for the BF16 logsumexp's dead
zone, entered at its caller ``calculate_logprobs`` as ``compute_loss`` calls it
(``_art_logprobs.load`` imports ``unsloth/train.py`` whole and hands the entry over).

The property, the logsumexp after the logits: with an identity head (each hidden row is its row
of logits, exact in every dtype, so the matmul is exact whatever its precision), or a 0/1 head
that selects each of a long vocabulary's logits from 66 hidden entries, every target
probability p < 1 gets ``|lp - log p| <= 8 eps32 (max |logit| + 1)`` (the row's largest
|logit|: an FP32 logsumexp's rounding scales with it, not with the target's), and the gradient
of ``sum(lp)`` reaching the hidden states is ``onehot - p`` (through the head) within ``4 eps``
of their dtype, plus ``8 eps32 (max |logit| + 1) p_j`` (what the logprob's bound moves p_j by)
and the dtype's smallest normal.

Split (issue #53): :func:`measure` runs ART on an input (its logits made by :func:`operands`
from the input's seed) and returns numbers only: the log-probabilities of 24 rows chosen by
their target probability (evenly over the rows sorted by 1 - p, the most and the least
confident among them, so every part of the dead zone and of the range below it is judged), and
the gradient reaching three hidden entries of each (the target's, a competitor's, the rest of
the vocabulary's). :func:`judge` (no ART) makes the same logits and holds those numbers to the
float64 log-softmax.
"""

from __future__ import annotations

import math
import random
from typing import Any

import _art_logprobs
import _domain
import _shown
import _simpler
import torch

CLAIM = "zeroed-logprob-and-gradient"
DTYPES = _art_logprobs.DTYPES
EPS32 = torch.finfo(torch.float32).eps
ART_CHUNK = _art_logprobs.ART_CHUNK
COVERS = (
    "hidden dtype bfloat16/float16/float32; 1 - p from 1e-5 to 0.6; rows 1-2100; chunk 1-1024; "
    "grad on and off; identity head (vocab 128), 0/1 head of hidden 66 (vocab 4,099-151,936, "
    "rows <= 16); logit 0.5-200; 24 rows judged; "
    + _art_logprobs.ENTERED
    + "; "
    + _art_logprobs.SCOPE
)
VOCAB = 128
# Vocabularies past a 4096-id cut-off, up to Qwen3's; with them the rows stay few (cheap).
LONG_VOCABS = (4_099, 32_000, _art_logprobs.REAL_VOCAB)
LONG_ROWS = 16
ROWS_SHOWN = 24
SAMPLES = 10  # random inputs after the edges (artbot draws as many with its own seed)


def edges() -> list[dict[str, Any]]:
    # A real vocabulary (Qwen3's 151,936 ids) first: a fix for small vocabularies only is no fix.
    out = [
        {
            "dtype": "bfloat16",
            "x": 40.0,
            "rows": LONG_ROWS,
            "chunk": ART_CHUNK,
            "grad": grad,
            "vocab": _art_logprobs.REAL_VOCAB,
        }
        for grad in (False, True)
    ]
    for dtype in DTYPES:
        for x in (6.0, 12.0, 24.0, 40.0, 80.0):
            out.append({"dtype": dtype, "x": x, "rows": 256, "chunk": ART_CHUNK, "grad": True})
    out.append({"dtype": "bfloat16", "x": 40.0, "rows": 256, "chunk": ART_CHUNK, "grad": False})
    out.append({"dtype": "bfloat16", "x": 40.0, "rows": 2100, "chunk": ART_CHUNK, "grad": True})
    out.append({"dtype": "bfloat16", "x": 0.5, "rows": 5, "chunk": 1, "grad": True})
    out.append({"dtype": "float32", "x": 200.0, "rows": 64, "chunk": 7, "grad": True})
    return [{"vocab": VOCAB, **case, "seed": 0} for case in out]


def sample(rng: random.Random) -> dict[str, Any]:
    """A random input (a long vocabulary keeps at most LONG_ROWS rows), and its seed."""
    dtype, x = rng.choice(list(DTYPES)), round(rng.uniform(0.5, 100.0), 2)
    rows, chunk = rng.choice((1, 3, 64, 300)), rng.choice((1, 16, 128, ART_CHUNK))
    grad, vocab = rng.random() < 0.7, rng.choice((VOCAB,) * 3 + LONG_VOCABS)
    if vocab > VOCAB:
        rows = min(rows, LONG_ROWS)
    seed = rng.randrange(2**31)
    return {
        "dtype": dtype,
        "x": x,
        "rows": rows,
        "chunk": chunk,
        "grad": grad,
        "vocab": vocab,
        "seed": seed,
    }


SIMPLEST = {
    "vocab": (VOCAB, *LONG_VOCABS),
    "dtype": ("bfloat16",),
    "grad": (False, True),
    "rows": (1, 64),
    "chunk": (ART_CHUNK,),
}


def logit_rows(x: float, rows: int, seed: int, dtype: torch.dtype) -> torch.Tensor:
    """[rows, VOCAB] logits in ``dtype``: target x at index 0; per row 1-64 competitors at
    a common gap chosen so that 1 - p is log-uniform on [1e-5, 0.6], jittered; the rest of the
    vocabulary 64 below the target."""
    gen = torch.Generator().manual_seed(seed % 2**63)
    n = torch.randint(1, 65, (rows,), generator=gen)
    one_minus_p = 10 ** (-5 + torch.rand(rows, generator=gen, dtype=torch.float64) * 4.78)
    gap = torch.log(n * (1 - one_minus_p) / one_minus_p)
    jitter = 0.05 * torch.randn(rows, 64, generator=gen, dtype=torch.float64)
    competitor = torch.arange(64) < n[:, None]
    out = torch.full((rows, VOCAB), x - 64.0, dtype=torch.float64)
    out[:, 0] = x
    out[:, 1:65] = torch.where(competitor, x - gap[:, None] + jitter, x - 64.0)
    return out.to(dtype)


@_shown.made_once
def operands(case: dict[str, Any]) -> tuple[torch.Tensor, ...]:
    """hidden [1, rows, H] in the case's dtype and ``sel`` (logit j is hidden entry sel[j]):
    from the case alone, the same in the check's process and in artbot's. The identity head
    (vocab 128) has H = 128; a long vocabulary H = 66: the target, 64 competitors' slots, and
    one entry (x - 64) for every id after them."""
    dtype = DTYPES[case["dtype"]]
    x, rows, vocab = case["x"], case["rows"], case.get("vocab", VOCAB)
    row_logits = logit_rows(
        x, rows, case.get("seed", 0) * 1_000_003 + rows * 17 + int(x * 100), dtype
    )
    if vocab == VOCAB:
        return row_logits.unsqueeze(0), torch.arange(VOCAB)
    hidden = torch.cat([row_logits[:, :65], row_logits[:, -1:]], -1).unsqueeze(0)
    return hidden, torch.cat([torch.arange(65), torch.full((vocab - 65,), 65)])


def head(hidden: torch.Tensor, sel: torch.Tensor) -> torch.Tensor:
    """The 0/1 head [H, vocab] in the hidden states' dtype, one 1 per column (at sel[j]): each
    logit is one hidden entry times 1 (the rest zeros), exact in every dtype."""
    out = torch.zeros(hidden.shape[-1], len(sel), dtype=hidden.dtype)
    out[sel, torch.arange(len(sel))] = 1
    return out


def shown_rows(hidden: torch.Tensor) -> torch.Tensor:
    """The rows judged: ROWS_SHOWN evenly over the rows sorted by 1 - p (the target's share
    among the hidden row's entries; the order only), the extremes included."""
    h = hidden.detach().double().reshape(hidden.shape[1], -1)
    one_minus_p = -torch.expm1(torch.log_softmax(h, -1)[:, 0])
    order = torch.sort(one_minus_p, stable=True).indices
    ranks = torch.linspace(0, len(order) - 1, min(len(order), ROWS_SHOWN)).round().long()
    return order[ranks.unique()].sort().values


class LseMeasure:
    """:func:`judge`'s measurements, made through ART's ``calculate_logprobs``."""

    def __init__(self, impl: Any) -> None:
        self.impl = impl

    def __call__(self, case: dict[str, Any]) -> dict[str, Any]:
        hidden, sel = operands(case)
        rows, shown = case["rows"], shown_rows(hidden)
        hidden.requires_grad_(case["grad"])
        ids = torch.zeros((1, rows), dtype=torch.long)  # the target is logit 0
        calls = self.impl(head(hidden, sel), hidden, ids, case["chunk"])
        logprobs = calls[0][1]
        raw = _art_logprobs.calls_lp(
            calls, lambda lp: lp.detach().double().reshape(rows)[shown].tolist()
        )
        if not case["grad"]:
            return raw
        raw["requires_grad"] = logprobs.requires_grad
        if not logprobs.requires_grad:
            return raw
        logprobs.double().sum().backward()
        grad = hidden.grad
        raw["grad"] = (
            None if grad is None else grad.double().reshape(rows, -1)[shown][:, [0, 1, -1]].tolist()
        )
        return raw


# The domain's bounds, which a case must keep to before the judge makes its operands.
CHOICES = {"dtype": tuple(DTYPES), "grad": (True, False), "vocab": (VOCAB, *LONG_VOCABS)}
LIMITS = {"x": (0.5, 200.0), "rows": (1, 2100), "chunk": (1, ART_CHUNK), "seed": (0, 2**31)}
MAX_LOGITS = 2**24  # rows x vocab: 9.7M at 64 x 151,936 (a shrunk long-vocabulary input)


def judge(case: dict[str, Any], raw: Any) -> _domain.Failure | None:
    """The property on one input, from the numbers :class:`LseMeasure` returned and the
    float64 log-softmax of the same logits (no ART)."""
    why = _shown.outside(case, CHOICES, LIMITS)
    if why is None and case["rows"] * case["vocab"] > MAX_LOGITS:
        why = "logits past the domain's size"
    if why is not None:
        return _domain.Failure(why, "an input of the claim's domain")
    if not isinstance(raw, dict):
        return _domain.Failure("no measurement", "log-probabilities")
    hidden, sel = operands(case)
    shown = shown_rows(hidden)
    vocab = case.get("vocab", VOCAB)
    h64 = hidden.double().reshape(case["rows"], -1)[shown]
    l64 = h64[:, sel]
    lp64 = torch.log_softmax(l64, -1)[:, 0]
    # The row's largest |logit|, not the target's: with the target at 1.5 and competitors far
    # below it, 0.5.23's FP32 path (the audit's fix) measured 1.5-2.5 times a bound of |x|.
    bound = 8 * EPS32 * (l64.abs().amax(-1) + 1)
    missing = _art_logprobs.calls_missing(case["grad"], raw)
    if missing is not None:
        return _domain.Failure("no measurement", missing)
    for lp in [raw.get("lp"), *(raw.get("lp_calls") or {}).values()]:
        ratio = _shown.worst(lp, lp64, bound)
        if ratio is None:
            return _domain.Failure("log-probabilities of the wrong shape", "log-probabilities")
        if ratio > 1:
            got = torch.tensor(lp, dtype=torch.float64)
            r = int(((got - lp64).abs()).nan_to_num(math.inf).argmax())
            return _domain.Failure(
                f"logprob {float(got[r]):.3g} at p = {float(lp64[r].exp()):.6f} "
                f"(log p {float(lp64[r]):.3g})",
                f"|error| <= {float(bound[r]):.2g}",
            )
    if not case["grad"]:
        return None
    if raw.get("requires_grad") is not True:
        return _domain.Failure("logprobs carry no gradient", "a gradient")
    if raw.get("grad") is None:
        return _domain.Failure("no gradient reached the hidden states", "a gradient")
    dtype = DTYPES[case["dtype"]]
    p = torch.softmax(l64, -1)
    exact = -p
    exact[:, 0] += 1
    # The hidden entries judged: the target's, a competitor's and the last (the background's;
    # for a long vocabulary it is every id past the 65th): each one's gradient is the sum of
    # its logits' (one logit, or all the background's), through the 0/1 head.
    cols = (0, 1, h64.shape[-1] - 1)
    eps = torch.full((3,), torch.finfo(dtype).eps, dtype=torch.float64)
    if vocab > VOCAB:  # the rest's entry sums vocab - 65 gradients: an accumulation's
        eps[-1] += math.sqrt(vocab) * EPS32
    head_t = torch.stack([sel == c for c in cols], -1).double()  # head^T's judged columns

    def through(g: torch.Tensor) -> torch.Tensor:  # (g @ head^T)[:, cols]
        return g @ head_t

    gbound = eps * through(4 * exact.abs()) + through(bound[:, None] * p) + torch.finfo(dtype).tiny
    exact = through(exact)
    ratio = _shown.worst(raw["grad"], exact, gbound)
    if ratio is None:
        return _domain.Failure("a gradient of the wrong shape", "a gradient")
    if ratio > 1:
        got = torch.tensor(raw["grad"], dtype=torch.float64)
        r = int(((got - exact).abs() / gbound).nan_to_num(math.inf).amax(-1).argmax())
        return _domain.Failure(
            f"target gradient {float(got[r, 0]):.3g} for 1 - p = {float(exact[r, 0]):.3g} "
            f"(error {ratio:.3g} x bound)",
            "4 eps |1 - p| + 8 eps32 (max |logit| + 1) p",
        )
    return None


def search(art: Any, seed: int = 0) -> tuple[_domain.Found, int]:
    """Item 2's search: artbot's plan when ``art`` carries one, else the edges and ``SAMPLES``
    draws; every input taped on ``art``."""
    with _art_logprobs.load(art) as (impl, line):
        found = _simpler.search(
            COVERS,
            edges(),
            None,
            SIMPLEST,
            sample=sample,
            samples=SAMPLES,
            seed=seed,
            claim=CLAIM,
            channel=art,
            measure=LseMeasure(impl),
            judge=judge,
        )
    return found, line
