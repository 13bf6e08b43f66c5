"""Items 2 and 401's checks: ART's Unsloth ``_calculate_logprobs`` searched over its domain.

``art/unsloth/train.py``'s ``_calculate_logprobs(lm_head_t, hidden_states, next_input_ids,
chunk_size) -> (log_probs, entropy)`` is run from ``unsloth/train.py`` imported whole (:func:`load`;
its module imports Unsloth's training stack, stood in for where absent). Two properties of its
log-probabilities (the first output; the entropy is a metric), each against a float64 oracle
computed here, outside ART's code, with bounds in units of the dtypes involved:

- item 401, the logits: the log-probabilities are those of the FP32-accurate product of the
  operands. Per token, ``|lp - lp64| <= 8 eps32 (sqrt(H) max_j (|h| @ |W|)_j + |lse64|)`` (an
  FP32-accumulated dot product's bound, plus the FP32 log-softmax), lp64 the float64
  log-softmax of the float64 product of the same operands; with grad on, the gradient of
  ``sum(u * lp)`` reaching the hidden states (and the head) within ``4 (eps + sqrt(n) eps32)``
  (eps their dtype's, n the terms an FP32 accumulation sums) of
  the float64 ``u (onehot - p) @ W^T``, plus what the FP32 logits' bound moves p by, 4 eps32 of the
  row's largest softmax gradient, and the dtype's subnormal spacing.
- item 2, the logsumexp after the logits: with an identity head (each hidden row is its row of
  logits, exact in every dtype, so the matmul is exact whatever its precision), every target
  probability p < 1 gets ``|lp - log p| <= 8 eps32 (|x| + 1)`` (x the target logit; an FP32
  logsumexp's accuracy), and the gradient of ``sum(lp)`` reaching the hidden states is
  ``onehot - p`` within ``4 eps`` of their dtype, plus ``8 eps32 (|x| + 1) p_j`` (what the
  logprob's bound moves p_j by) and the dtype's smallest normal.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import random
from collections.abc import Iterator
from typing import Any

import _art_whole
import _domain
import _simpler
import torch

RELPATH = "unsloth/train.py"
FUNCTION = "_calculate_logprobs"
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
EPS32 = torch.finfo(torch.float32).eps
ART_CHUNK = 1024  # ART's default logprob_calculation_chunk_size
REAL_VOCAB = 151_936


@contextlib.contextmanager
def load(art: Any) -> Iterator[tuple[Any, int]]:
    """ART's ``_calculate_logprobs`` and its first line, from ``unsloth/train.py`` imported whole
    (``_art_whole``: Unsloth's training stack stood in for where absent), so a helper, alias or
    table of the file resolves as in ART; the module stays importable while the context is open."""
    with _art_whole.whole(art) as whole:
        function = getattr(whole.load(RELPATH), FUNCTION)
        yield function, inspect.getsourcelines(function)[1]


def _ratio(err: torch.Tensor, bound: torch.Tensor) -> float:
    return float((err / bound.clamp_min(1e-300)).max())


# ---- item 401: the logits -------------------------------------------------------------------

LOGITS_COVERS = (
    "hidden dtype bfloat16/float16/float32; grad off, hidden, hidden+head; chunk 1-1024 "
    "(ART's default); batch 1-2, positions 1-1100; vocab 17-151,936 (151,936: 32 positions, 8 "
    "with grad, hidden 8); hidden 8-256; logits up to about 4 or 58; hidden-state |max| 4, 40 "
    "or 400 (real final-norm outputs reach hundreds; the head scaled down to match)"
)


def logits_edges() -> list[dict[str, Any]]:
    """Qwen3's vocabulary first (it decides a fix for small chunks only), then every dtype x grad
    mode, then the other sizes."""
    base = {
        "batch": 1,
        "seq": 32,
        "chunk": 16,
        "vocab": 2048,
        "hidden": 128,
        "scale": 58.0,
        "hmax": 4.0,
    }
    out = [  # a chunk of 32 x 151,936 = 4.9M logits, then one with grad
        {**base, "dtype": "bfloat16", "grad": "off", "vocab": REAL_VOCAB, "hidden": 8, "chunk": 32},
        {
            **base,
            "dtype": "bfloat16",
            "grad": "hidden",
            "vocab": REAL_VOCAB,
            "hidden": 8,
            "chunk": ART_CHUNK,
            "seq": 8,
        },
    ]
    out += [
        {**base, "dtype": d, "grad": g} for d in DTYPES for g in ("off", "hidden", "hidden+head")
    ]
    out += [
        {**base, "dtype": "bfloat16", "grad": "hidden", "scale": 4.0},
        {
            **base,
            "dtype": "bfloat16",
            "grad": "hidden",
            "seq": 1100,
            "chunk": ART_CHUNK,
            "vocab": 512,
            "hidden": 64,
        },
        {**base, "dtype": "bfloat16", "grad": "hidden", "chunk": 1, "seq": 3},
        {**base, "dtype": "bfloat16", "grad": "hidden", "batch": 2, "seq": 48},
        # Hidden states as large as a real model's (the head smaller, the logits the same).
        {**base, "dtype": "bfloat16", "grad": "off", "hidden": 64, "hmax": 40.0},
        {**base, "dtype": "bfloat16", "grad": "hidden", "hmax": 400.0},
        {**base, "dtype": "float16", "grad": "off", "hidden": 64, "hmax": 400.0},
    ]
    return out


def logits_sample(rng: random.Random) -> dict[str, Any]:
    return {
        "batch": rng.choice((1, 2)),
        "seq": rng.choice((1, 5, 40, 100)),
        "chunk": rng.choice((3, 7, 32, 64, ART_CHUNK)),
        "vocab": rng.choice((17, 1000, 2048)),
        "hidden": rng.choice((8, 64, 256)),
        "scale": rng.choice((4.0, 20.0, 58.0)),
        "dtype": rng.choice(list(DTYPES)),
        "grad": rng.choice(("off", "hidden", "hidden+head")),
        "hmax": rng.choice((4.0, 40.0, 400.0)),
    }


LOGITS_SIMPLEST = {
    "dtype": ("bfloat16",),
    "grad": ("off", "hidden"),
    "batch": (1,),
    "seq": (1, 32),
    "chunk": (16,),
    "vocab": (2048,),
    "hidden": (8, 64, 128, 256),
    "scale": (58.0,),
    "hmax": (4.0, 40.0, 400.0),
}


class LogitsProperty:
    def __init__(self, impl: Any) -> None:
        self.impl = impl

    def __call__(self, inp: dict[str, Any]) -> _domain.Failure | None:
        dtype = DTYPES[inp["dtype"]]
        b, s, v, h = inp["batch"], inp["seq"], inp["vocab"], inp["hidden"]
        gen = torch.Generator().manual_seed(b * 7 + s * 131 + v * 3 + h)
        # Logits h @ W have a standard deviation of about scale / 4: the top reaches ~scale.
        # The hidden states' standard deviation is hmax / 4 (their |max| about hmax), the head
        # divided by as much, so the logits keep their size whatever the hidden states'.
        spread = inp.get("hmax", 4.0) / 4
        hidden = (torch.randn(b, s, h, generator=gen, dtype=torch.float64) * spread).to(dtype)
        head = (
            torch.randn(h, v, generator=gen, dtype=torch.float64)
            * (inp["scale"] / 4 / math.sqrt(h) / spread)
        ).to(dtype)
        ids = torch.randint(0, v, (b, s), generator=gen)
        hidden.requires_grad_(inp["grad"] != "off")
        head.requires_grad_(inp["grad"] == "hidden+head")
        logprobs = self.impl(head, hidden, ids, inp["chunk"])[0]
        h64, w64 = hidden.detach().double(), head.detach().double()
        logits64 = h64 @ w64
        lse64 = torch.logsumexp(logits64, -1)
        lp64 = logits64.gather(-1, ids[..., None]).squeeze(-1) - lse64
        dot = math.sqrt(h) * (h64.abs() @ w64.abs()).amax(-1)
        bound = 8 * EPS32 * (dot + lse64.abs())
        ratio = _ratio((logprobs.detach().double() - lp64).abs(), bound)
        if ratio > 1:
            return _domain.Failure(round(ratio, 3), "1 (logprob error / FP32 bound)")
        if inp["grad"] == "off":
            return None
        if not logprobs.requires_grad:
            return _domain.Failure("logprobs carry no gradient", "a gradient")
        u = torch.randn(b, s, generator=gen, dtype=torch.float64)
        (logprobs.double() * u).sum().backward()
        p = torch.softmax(logits64, -1)
        d = -p
        d.scatter_add_(-1, ids[..., None], torch.ones(b, s, 1, dtype=torch.float64))
        gd = u[..., None] * d  # d(sum u lp) / d logits, [b, s, v]
        # What the FP32 logits' bound moves: each p_j by up to p_j * 2 * bound.
        # An FP32 softmax's backward is accurate to eps32 of the row's largest entry.
        top = d.abs().amax(-1, keepdim=True)
        slack = u.abs()[..., None] * (p * 2 * bound[..., None] + 4 * EPS32 * top)
        # Each leaf's gradient sums over the vocabulary (hidden) or the tokens (head): an FP32
        # accumulation adds up to sqrt(terms) eps32 of the sum of magnitudes, typically.
        terms_h, terms_w = math.sqrt(v), math.sqrt(b * s)
        leaves = [(hidden, gd @ w64.T, gd.abs() @ w64.abs().T, slack @ w64.abs().T, terms_h)]
        if head.requires_grad:
            leaves.append(
                (
                    head,
                    torch.einsum("bsh,bsv->hv", h64, gd),
                    torch.einsum("bsh,bsv->hv", h64.abs(), gd.abs()),
                    torch.einsum("bsh,bsv->hv", h64.abs(), slack),
                    terms_w,
                )
            )
        for leaf, exact, size, moved, terms in leaves:
            if leaf.grad is None:
                return _domain.Failure("no gradient reached the leaf", "a gradient")
            eps = torch.finfo(leaf.dtype).eps + terms * EPS32
            # The floor: the dtype's subnormal spacing (an FP16 gradient of 1e-20 is 0).
            floor = torch.finfo(leaf.dtype).tiny * torch.finfo(leaf.dtype).eps
            bound_g = 4 * eps * (size + moved) + moved + floor
            ratio = _ratio((leaf.grad.double() - exact).abs(), bound_g)
            if ratio > 1:
                return _domain.Failure(round(ratio, 3), "1 (gradient error / bound)")
        return None


def search_logits(art: Any, seed: int = 0, samples: int = 4) -> tuple[_domain.Found, int]:
    with load(art) as (impl, line):
        found = _simpler.search(
            LOGITS_COVERS,
            logits_edges(),
            LogitsProperty(impl),
            LOGITS_SIMPLEST,
            sample=logits_sample,
            samples=samples,
            seed=seed,
        )
    return found, line


# ---- item 2: the logsumexp ------------------------------------------------------------------

LSE_COVERS = (
    "identity head (vocab 128) or a 0/1 selection head of hidden 66 (vocab 4,099-151,936, "
    "rows up to 16); hidden dtype bfloat16/float16/float32; target logit 0.5-200; 1 - p from "
    "1e-5 to 0.6 (1-64 competitors); rows 1-2100; chunk 1-1024; grad on and off"
)
LSE_VOCAB = 128
# Vocabularies past a 4096-id cut-off, up to Qwen3's; with them the rows stay few (cheap).
LONG_VOCABS = (4_099, 32_000, REAL_VOCAB)
LONG_ROWS = 16


def lse_edges() -> list[dict[str, Any]]:
    # A real vocabulary (Qwen3's 151,936 ids) first: a fix for small vocabularies only is no fix.
    out = [
        {
            "dtype": "bfloat16",
            "x": 40.0,
            "rows": LONG_ROWS,
            "chunk": ART_CHUNK,
            "grad": grad,
            "vocab": REAL_VOCAB,
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
    return out


def lse_sample(rng: random.Random) -> dict[str, Any]:
    return {
        "dtype": rng.choice(list(DTYPES)),
        "x": round(rng.uniform(0.5, 100.0), 2),
        "rows": rng.choice((1, 3, 64, 300)),
        "chunk": rng.choice((1, 16, 128, ART_CHUNK)),
        "grad": rng.random() < 0.7,
        "vocab": rng.choice((LSE_VOCAB,) * 3 + LONG_VOCABS),
    }


def lse_case(inp: dict[str, Any]) -> dict[str, Any]:
    """A sampled case as run: a long vocabulary keeps at most LONG_ROWS rows."""
    if inp.get("vocab", LSE_VOCAB) > LSE_VOCAB:
        return {**inp, "rows": min(inp["rows"], LONG_ROWS)}
    return inp


LSE_SIMPLEST = {
    "vocab": (LSE_VOCAB, *LONG_VOCABS),
    "dtype": ("bfloat16",),
    "grad": (False, True),
    "rows": (1, 64),
    "chunk": (ART_CHUNK,),
}


def lse_rows(x: float, rows: int, seed: int, dtype: torch.dtype) -> torch.Tensor:
    """[rows, LSE_VOCAB] logits in ``dtype``: target x at index 0; per row 1-64 competitors at
    a common gap chosen so that 1 - p is log-uniform on [1e-5, 0.6], jittered; the rest of the
    vocabulary 64 below the target."""
    gen = torch.Generator().manual_seed(seed)
    n = torch.randint(1, 65, (rows,), generator=gen)
    one_minus_p = 10 ** (-5 + torch.rand(rows, generator=gen, dtype=torch.float64) * 4.78)
    gap = torch.log(n * (1 - one_minus_p) / one_minus_p)
    out = torch.full((rows, LSE_VOCAB), x - 64.0, dtype=torch.float64)
    out[:, 0] = x
    for r in range(rows):
        k = int(n[r])
        jitter = 0.05 * torch.randn(k, generator=gen, dtype=torch.float64)
        out[r, 1 : 1 + k] = x - gap[r] + jitter
    return out.to(dtype)


class LseProperty:
    def __init__(self, impl: Any) -> None:
        self.impl = impl

    def __call__(self, inp: dict[str, Any]) -> _domain.Failure | None:
        dtype = DTYPES[inp["dtype"]]
        x, rows, vocab = inp["x"], inp["rows"], inp.get("vocab", LSE_VOCAB)
        row_logits = lse_rows(x, rows, seed=rows * 17 + int(x * 100), dtype=dtype)
        if vocab == LSE_VOCAB:  # the identity head: each hidden row is its row of logits
            hidden = row_logits.unsqueeze(0).clone()
            sel = torch.arange(LSE_VOCAB)
        else:  # hidden 66: the target, 64 competitors' slots, the rest (x - 64) for every id after
            hidden = torch.cat([row_logits[:, :65], row_logits[:, -1:]], -1).unsqueeze(0)
            sel = torch.cat([torch.arange(65), torch.full((vocab - 65,), 65)])
        # Logit j is hidden entry sel[j]: a 0/1 head with one 1 per column.
        head = torch.zeros(hidden.shape[-1], vocab, dtype=dtype)
        head[sel, torch.arange(vocab)] = 1
        hidden.requires_grad_(inp["grad"])
        ids = torch.zeros((1, rows), dtype=torch.long)
        logprobs = self.impl(head, hidden, ids, inp["chunk"])[0]
        # Each logit is one hidden entry times 1 (the rest zeros): exact in every dtype.
        h64 = hidden.detach().double().reshape(rows, -1)
        l64 = h64[:, sel]
        lp64 = torch.log_softmax(l64, -1)[:, 0]
        bound = 8 * EPS32 * (abs(x) + 1)
        err = (logprobs.detach().double().reshape(rows) - lp64).abs()
        if float(err.max()) > bound:
            r = int(err.argmax())
            return _domain.Failure(
                f"logprob {float(logprobs.detach().reshape(rows)[r]):.3g} at p = "
                f"{float(lp64[r].exp()):.6f} (log p {float(lp64[r]):.3g})",
                f"|error| <= {bound:.2g}",
            )
        if not inp["grad"]:
            return None
        if not logprobs.requires_grad:
            return _domain.Failure("logprobs carry no gradient", "a gradient")
        logprobs.double().sum().backward()
        if hidden.grad is None:
            return _domain.Failure("no gradient reached the hidden states", "a gradient")
        p = torch.softmax(l64, -1)
        exact = -p
        exact[:, 0] += 1
        eps = torch.full((h64.shape[-1],), torch.finfo(dtype).eps, dtype=torch.float64)
        if vocab > LSE_VOCAB:  # the rest's entry sums vocab - 65 gradients: an accumulation's
            eps[-1] += math.sqrt(vocab) * EPS32

        # Through the head: each hidden entry's gradient is its logits' (summed for the rest).
        def through(g: torch.Tensor) -> torch.Tensor:  # g @ head^T, summed by index
            return torch.zeros(rows, h64.shape[-1], dtype=g.dtype).index_add_(1, sel, g)

        per = through(4 * exact.abs())
        gbound = eps * per + through(bound * p) + torch.finfo(dtype).tiny
        exact = through(exact)
        gerr = (hidden.grad.double().reshape(rows, -1) - exact).abs()
        ratio = _ratio(gerr, gbound)
        if ratio > 1:
            r = int((gerr / gbound).amax(-1).argmax())
            return _domain.Failure(
                f"target gradient {float(hidden.grad.reshape(rows, -1)[r, 0]):.3g} for 1 - p = "
                f"{float(exact[r, 0]):.3g} (error {ratio:.3g} x bound)",
                "4 eps |1 - p| + 8 eps32 (|x| + 1) p",
            )
        return None


def search_lse(art: Any, seed: int = 0, samples: int = 10) -> tuple[_domain.Found, int]:
    with load(art) as (impl, line):
        found = _simpler.search(
            LSE_COVERS,
            lse_edges(),
            LseProperty(impl),
            LSE_SIMPLEST,
            sample=lambda rng: lse_case(lse_sample(rng)),
            samples=samples,
            seed=seed,
        )
    return found, line
