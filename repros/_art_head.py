"""Item 4's check: ART's LM-head function run on CPU around a stand-in output layer, searched
over the claim's domain (``_domain``).

``TrainerRank._local_logits_from_hidden_rows`` (``trainer_rank/_impl.py``) takes the logits of
a chunk of hidden rows from ``model.output_layer(hidden.unsqueeze(1), weight=output_weight,
...)`` and returns them through ``model._scale_logits`` and ``_batch_seq_logits``.
``trainer_rank/_impl.py`` is imported whole (``_art_whole``: Megatron stood in for; on Python
3.11 its ``type X = ...`` statements run as assignments) and the method is called on an
uninitialised ``TrainerRank`` (its other methods and the module's helpers are ART's own), with:

- a stand-in model: ``_scale_logits`` returns the logits as given (Megatron scales only when a
  model sets a logit multiplier);
- a stand-in output layer that records the dtypes of the input and weight it is given and
  returns their product as a GPU GEMM with FP32 accumulation does: the FP32 product rounded
  once to the operands' dtype (differentiable). Operands of two dtypes are refused, as
  ``F.linear`` refuses them. Its own weight (used when ``weight`` is None) is the model's dtype.

The property, on every input of the domain: the logits ART returns are the product of the rows
and the weight to FP32 accuracy (each logit within ``4 sqrt(H) eps32`` of ``|h| @ |w|``, the
bound of an FP32-accumulated dot product), and, with the rows (and the weight) requiring grad,
the logits carry a gradient and the gradient of ``sum(G * logits)`` reaching the rows (and the
weight) is ``G @ W`` (and ``G^T @ H``) in float64 to within ``4 eps`` of the leaf's dtype
times ``|G| @ |W|``. The oracle is float64 arithmetic on the same operands, outside ART's code.

The domain: the model's dtype (BF16, FP16, FP32: rows and weight alike), grad off / rows /
rows and weight, the weight passed (tied) or the layer's own, chunk rows 1 to 512 (ART's
``_HEAD_CHUNK_TOKENS``), vocabulary 512 to 151,936 (Qwen3's), hidden sizes 4 to 2560. The
full-size corners (64 and 512 rows x 151,936 ids) are run with a hidden size of 4, so
that the float64 oracle stays cheap (scaled down in the hidden size only: every
branch a fix could take on rows, vocabulary, dtype or grad mode is reached).
"""

from __future__ import annotations

import math
import random
import types
from typing import Any

import _art_whole
import _domain
import _simpler
import torch

RELPATH = "trainer_rank/_impl.py"
CLASS = "TrainerRank"
METHOD = "_local_logits_from_hidden_rows"
ENTRY = "_local_head_stats"  # METHOD's caller on every release (0.5.20-0.5.23)
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
GRADS = ("off", "rows", "rows+weight")
REAL_VOCAB, REAL_CHUNK = 151_936, 512
COVERS = (
    "dtype bfloat16/float16/float32; grad off, rows, rows+weight; weight passed or the "
    "layer's own; rows 1-512 (ART's chunk), vocab 17-151,936, hidden 4-2560 (151,936 ids at "
    "hidden 4: 64 rows with grad off and on, 512 rows with grad)"
)


class StandInOutputLayer:
    """Records what it is given; returns (logits, None) as a GPU GEMM would round them."""

    def __init__(self, weight: torch.Tensor) -> None:
        self.weight = weight
        self.sequence_parallel = False
        self.seen: list[tuple[str, str]] = []

    def __call__(
        self, x: torch.Tensor, weight: torch.Tensor | None = None, **_: Any
    ) -> tuple[torch.Tensor, None]:
        used = self.weight if weight is None else weight
        self.seen.append((_name(x.dtype), _name(used.dtype)))
        if x.dtype != used.dtype:
            raise TypeError(
                f"the output layer's GEMM was given {_name(x.dtype)} rows and a "
                f"{_name(used.dtype)} weight"
            )
        # FP32 accumulation, one rounding to the operands' dtype (FP32 operands: FP32 out).
        return (x.float() @ used.float().T).to(x.dtype), None


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def edges() -> list[dict[str, Any]]:
    """The realistic sizes first (they decide a fix that holds for small chunks only), then
    every dtype x grad mode x weight source on a small chunk, then the other sizes."""
    out: list[dict[str, Any]] = []
    for grad in ("off", "rows"):
        out.append(
            {
                "dtype": "bfloat16",
                "grad": grad,
                "tied": True,
                "rows": 64,
                "vocab": REAL_VOCAB,
                "hidden": 4,
            }
        )
    out.append(
        {
            "dtype": "bfloat16",
            "grad": "rows",
            "tied": False,
            "rows": REAL_CHUNK,
            "vocab": REAL_VOCAB,
            "hidden": 4,
        }
    )
    for dtype in DTYPES:
        for grad in GRADS:
            for tied in (True, False):
                out.append(
                    {
                        "dtype": dtype,
                        "grad": grad,
                        "tied": tied,
                        "rows": 64,
                        "vocab": 512,
                        "hidden": 64,
                    }
                )
    for rows, vocab, hidden in ((1, 512, 64), (REAL_CHUNK, 512, 64), (64, 512, 2560)):
        out.append(
            {
                "dtype": "bfloat16",
                "grad": "rows",
                "tied": True,
                "rows": rows,
                "vocab": vocab,
                "hidden": hidden,
            }
        )
    return out


def sample(rng: random.Random) -> dict[str, Any]:
    """A small random input: dtype, grad mode, weight source and shape drawn independently."""
    return {
        "dtype": rng.choice(list(DTYPES)),
        "grad": rng.choice(GRADS),
        "tied": rng.random() < 0.5,
        "rows": rng.choice((1, 2, 7, 33, 64, 100, 256)),
        "vocab": rng.choice((17, 512, 1000, 4096)),
        "hidden": rng.choice((8, 16, 64, 128)),
    }


SIMPLEST = {
    "dtype": ("bfloat16",),
    "grad": ("off", "rows"),
    "tied": (True,),
    "rows": (1, 64),
    "vocab": (512,),
    "hidden": (4, 64),
}


class HeadProperty:
    """The property on one input, run with ART's method; remembers what the GEMM was given."""

    def __init__(self, whole: _art_whole.Whole) -> None:
        impl = whole.load(RELPATH)
        cls = getattr(impl, CLASS)
        # An uninitialised TrainerRank: the method, and every method or module-level helper it
        # calls, resolve as in ART (the instance's attributes are set by __init__, not run).
        self.trainer = cls.__new__(cls)
        self.line = getattr(cls, METHOD).__code__.co_firstlineno
        self.path = f"{whole.art.name}/{RELPATH}"
        self.seen: set[tuple[str, str]] = set()
        self.out_dtypes: set[str] = set()

    def __call__(self, inp: dict[str, Any]) -> _domain.Failure | None:
        dtype = DTYPES[inp["dtype"]]
        rows, vocab, hidden_size = inp["rows"], inp["vocab"], inp["hidden"]
        gen = torch.Generator().manual_seed(rows * 131 + vocab * 7 + hidden_size)
        hidden = (3.0 * torch.randn(rows, hidden_size, generator=gen)).to(dtype)
        weight = (torch.randn(vocab, hidden_size, generator=gen) / hidden_size**0.5).to(dtype)
        hidden.requires_grad_(inp["grad"] != "off")
        weight.requires_grad_(inp["grad"] == "rows+weight")
        layer = StandInOutputLayer(weight if not inp["tied"] else weight.detach().clone())
        model = types.SimpleNamespace(output_layer=layer, _scale_logits=lambda logits: logits)
        try:
            # Entered at the call site: the head's statistics without the log-normaliser or
            # top-k (those read the logits; they do not make them), whose first output is the
            # local logits; a fix made there (in the caller) counts.
            logits = getattr(self.trainer, ENTRY)(
                model,
                hidden,
                output_weight=weight if inp["tied"] else None,
                need_log_z=False,
                max_top_k=0,
            )[0]
        except TypeError as exc:
            return _domain.Failure(f"refused: {exc}"[:120], "FP32 logits")
        finally:
            self.seen.update(layer.seen)
        self.out_dtypes.add(_name(logits.dtype))
        logits = logits.reshape(rows, vocab)
        h64, w64 = hidden.detach().double(), weight.detach().double()
        # The float64 oracle on at most 16 rows, spread evenly (the first and the last included).
        picked = torch.linspace(0, rows - 1, min(rows, 16)).round().long().unique()
        exact = h64[picked] @ w64.T
        bound = 4 * math.sqrt(hidden_size) * EPS32 * (h64[picked].abs() @ w64.abs().T)
        got = logits.detach()[picked].double()
        worst = float(((got - exact).abs() / bound.clamp_min(1e-300)).max())
        if worst > 1:
            return _domain.Failure(round(worst, 3), "1 (error / FP32 bound)")
        if inp["grad"] == "off":
            return None
        return _grad_failure(logits, hidden, weight, gen)


EPS32 = torch.finfo(torch.float32).eps


def _grad_failure(
    logits: torch.Tensor, hidden: torch.Tensor, weight: torch.Tensor, gen: torch.Generator
) -> _domain.Failure | None:
    """The gradient of sum(G * logits), G = u v^T (random u, v), reaching the rows (and the
    weight), against float64 G @ W = u (v^T W) (and G^T @ H = v (u^T H)), within 4 eps of the
    leaf's dtype times |G| @ |W| (|G|^T @ |H|)."""
    if not logits.requires_grad:
        return _domain.Failure("logits carry no gradient", "a gradient")
    rows, vocab = logits.shape
    u = torch.randn(rows, generator=gen, dtype=torch.float64)
    v = torch.randn(vocab, generator=gen, dtype=torch.float64)
    ((logits.float() @ v.float()).double() * u).sum().backward()
    eps = torch.finfo(hidden.dtype).eps
    h, w = hidden.detach().double(), weight.detach().double()
    leaves = [(hidden, u[:, None] * (v @ w)[None], u.abs()[:, None] * (v.abs() @ w.abs())[None])]
    if weight.requires_grad:
        leaves.append(
            (weight, v[:, None] * (u @ h)[None], v.abs()[:, None] * (u.abs() @ h.abs())[None])
        )
    for leaf, exact, scale in leaves:
        if leaf.grad is None:
            return _domain.Failure("no gradient reached the leaf", "a gradient")
        # v rounded to FP32 and G's entries to the logits' dtype add a few eps32 at most.
        bound = 4 * eps * scale + 8 * EPS32 * scale
        ratio = float(((leaf.grad.double() - exact).abs() / bound.clamp_min(1e-300)).max())
        if ratio > 1:
            return _domain.Failure(round(ratio, 3), "1 (gradient error / 4 eps |G| @ |W|)")
    return None


def run(art: Any, seed: int = 0, samples: int = 12) -> dict[str, Any]:
    """ART's ``_local_logits_from_hidden_rows`` over the domain; the first counterexample."""
    with _art_whole.whole(art) as whole:
        prop = HeadProperty(whole)
        found = _simpler.search(
            COVERS, edges(), prop, SIMPLEST, sample=sample, samples=samples, seed=seed
        )
        stand_ins = whole.said()
    return {
        "found": found,
        "seen": sorted(prop.seen),
        "out_dtypes": sorted(prop.out_dtypes),
        "where": f"{prop.path}:{prop.line}",
        "line": prop.line,
        "stand_ins": stand_ins,
    }


def describe(measured: dict[str, Any]) -> str:
    """What the GEMM was given, what came back, and where the property held or failed."""
    seen = ", ".join(f"{x} rows x {w} weight" for x, w in measured["seen"]) or "never called"
    return (
        f"GEMM given {seen}; logits returned in {', '.join(measured['out_dtypes']) or 'none'}; "
        + _simpler.said(measured["found"])
    )
