"""Item 4's check: ART's LM-head function run on CPU around a stand-in output layer, searched
over the claim's domain (``_domain``).

``TrainerRank._local_logits_from_hidden_rows`` (``trainer_rank/_impl.py``) takes the logits of
a chunk of hidden rows from ``model.output_layer(hidden.unsqueeze(1), weight=output_weight,
...)`` and returns them through ``model._scale_logits`` and ``_batch_seq_logits``.
``trainer_rank/_impl.py`` is imported whole (``_art_whole``: Megatron stood in for; on Python
3.11 its ``type X = ...`` statements run as assignments) and the method is called on an
uninitialised ``TrainerRank`` (its other methods and the module's helpers are ART's own), with:

- a stand-in model (named as Megatron's ``GPTModel``): ``_scale_logits`` returns the logits
  as given (Megatron scales only when a model sets a logit multiplier);
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

Split (issue #53): :class:`HeadMeasure` runs ART on an input and returns what ART's code made
at 8 rows x 8 vocabulary ids (the first and last of each among them, the rest drawn from the
input's seed): the logits, and the gradients at those rows (ids) x 4 hidden columns, as
numbers. :func:`judge` (no ART) makes the same operands from the input (:func:`operands`: a
seeded generator, artbot's code) and holds those numbers to the float64 oracle. One BF16 or
FP16 rounding of a logit is over a hundred times the FP32 bound (1,200 times for BF16 at
hidden 4), so each of the 64 logits judged shows it: a fix that spares a part of an input is
missed only where that part holds none of them.

The domain: the model's dtype (BF16, FP16, FP32: rows and weight alike), grad off / rows /
rows and weight, the weight passed (tied) or the layer's own, the tensor-parallel layout as
ART's Megatron provider sets it (TP 1, 2, 4 or 8, any rank; sequence parallelism on whenever
TP > 1: the output layer's ``sequence_parallel`` is on when ART's head is entered, and the
stood-in ``parallel_state`` answers the case's size and rank), chunk rows 1 to 512 (ART's
``_HEAD_CHUNK_TOKENS``), vocabulary (this rank's shard) 512 to 151,936 (Qwen3's), hidden
sizes 4 to 2560. The stand-in output layer and model are named as Megatron's
(``ColumnParallelLinear``, ``GPTModel``, with their modules), so a head that looks at the
layer's type sees Megatron's names (issue #53).

Not reached: a head at a real 7-8B model's size. Qwen3-8B's (151,936 x 4,096 at TP 1) is a
1.24 GB BF16 weight, and a fix's FP32 copy of it 2.5 GB more: under the check's 4 GB address
space (``artbot.verify.limits``) that copy's allocation fails (measured, torch alone on CPU),
so a fix that keeps BF16 only for weights past the domain's ``MAX_WEIGHT`` elements is not
seen by the check (the review's f03 gates at 2^29). The
full-size corners (64 and 512 rows x 151,936 ids) are run with a hidden size of 4, so
that the float64 oracle stays cheap (scaled down in the hidden size only: every
branch a fix could take on rows, vocabulary, dtype or grad mode is reached).
"""

from __future__ import annotations

import importlib
import math
import random
import types
from typing import Any

import _art_whole
import _domain
import _shown
import _simpler
import torch

RELPATH = "trainer_rank/_impl.py"
CLASS = "TrainerRank"
METHOD = "_local_logits_from_hidden_rows"
ENTRY = "_local_head_stats"  # METHOD's caller on every release (0.5.20-0.5.23)
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
GRADS = ("off", "rows", "rows+weight")
REAL_VOCAB, REAL_CHUNK = 151_936, 512
# Tensor-parallel sizes: ART's Megatron provider sets TP to 1 (context parallelism) or to the
# visible GPU count, and sequence parallelism on whenever TP > 1 (megatron/provider.py).
TP_SIZES = (1, 2, 4, 8)
CLAIM = "bf16-logit-rounding-noise"
SAMPLES = 12  # random inputs after the edges (artbot draws as many with its own seed)
COVERS = (
    "dtype bfloat16/float16/float32; grad off, rows, rows+weight; weight passed or the "
    "layer's own; tensor-parallel size 1-8 with sequence parallelism as ART's provider sets it "
    "(on when TP > 1), any rank; rows 1-512 (ART's chunk), vocab 17-151,936, hidden 4-2560 "
    "(151,936 ids at hidden 4: 64 rows with grad off and on, 512 rows with grad); 8 rows x 8 "
    "ids of each judged"
)


class StandInOutputLayer:
    """Records what it is given; returns (logits, None) as a GPU GEMM would round them. Named
    as Megatron's output layer is (``GPTModel.output_layer``, a ``ColumnParallelLinear``), with
    ``sequence_parallel`` as ART's provider sets it: nothing of its type tells it from the
    layer training runs but what it does."""

    __module__ = "megatron.core.tensor_parallel.layers"
    __qualname__ = "ColumnParallelLinear"

    def __init__(self, weight: torch.Tensor, sequence_parallel: bool = False) -> None:
        self.weight = weight
        self.sequence_parallel = sequence_parallel
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


StandInOutputLayer.__name__ = "ColumnParallelLinear"


class StandInModel:
    """The model ``_local_head_stats`` is given, named as Megatron's ``GPTModel``:
    ``_scale_logits`` returns the logits as given (no logit multiplier configured)."""

    __module__ = "megatron.core.models.gpt.gpt_model"
    __qualname__ = "GPTModel"

    def __init__(self, output_layer: StandInOutputLayer) -> None:
        self.output_layer = output_layer

    def _scale_logits(self, logits: torch.Tensor) -> torch.Tensor:
        return logits


StandInModel.__name__ = "GPTModel"


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _parallel(case: dict[str, Any]) -> tuple[int, int]:
    """The case's tensor-parallel size and this rank's index (1 and 0 in a case without)."""
    return case.get("tp", 1), case.get("tp_rank", 0)


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
    # Qwen3's vocabulary sharded over 8 tensor-parallel ranks (sequence parallelism on), the
    # last rank's shard.
    out.append(
        {
            "dtype": "bfloat16",
            "grad": "rows",
            "tied": True,
            "rows": 64,
            "vocab": REAL_VOCAB // 8,
            "hidden": 4,
            "tp": 8,
            "tp_rank": 7,
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
                # Each dtype x grad mode x weight source with and without sequence parallelism:
                # the tensor-parallel size and rank run through their values across the cases.
                for sp in (False, True):
                    tp = TP_SIZES[1 + len(out) % (len(TP_SIZES) - 1)] if sp else 1
                    out.append(
                        {
                            "dtype": dtype,
                            "grad": grad,
                            "tied": tied,
                            "rows": 64,
                            "vocab": 512,
                            "hidden": 64,
                            "tp": tp,
                            "tp_rank": len(out) % tp,
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
    return [{"tp": 1, "tp_rank": 0, **case, "seed": 0} for case in out]


def sample(rng: random.Random) -> dict[str, Any]:
    """A small random input: dtype, grad mode, weight source, tensor-parallel size and rank
    and shape drawn independently, and the seed its operands are made from."""
    tp = rng.choice(TP_SIZES)
    return {
        "tp": tp,
        "tp_rank": rng.randrange(tp),
        "dtype": rng.choice(list(DTYPES)),
        "grad": rng.choice(GRADS),
        "tied": rng.random() < 0.5,
        "rows": rng.choice((1, 2, 7, 33, 64, 100, 256)),
        "vocab": rng.choice((17, 512, 1000, 4096)),
        "hidden": rng.choice((8, 16, 64, 128)),
        "seed": rng.randrange(2**31),
    }


SIMPLEST = {
    "tp": (1, 2),
    "tp_rank": (0,),
    "dtype": ("bfloat16",),
    "grad": ("off", "rows"),
    "tied": (True,),
    "rows": (1, 64),
    "vocab": (512,),
    "hidden": (4, 64),
}


SHOWN = 8  # rows and vocabulary ids of an input whose values are judged
COLUMNS = 4  # hidden columns of the gradients judged
EPS32 = torch.finfo(torch.float32).eps


@_shown.made_once
def operands(case: dict[str, Any]) -> tuple[torch.Tensor, ...]:
    """The input's rows [T, H] and weight [V, H] in its dtype, and the float64 u [T], v [V] of
    the upstream gradient G = u v^T: made from the case alone (its seed and shape), the same
    in the check's process and in artbot's."""
    dtype = DTYPES[case["dtype"]]
    rows, vocab, hidden_size = case["rows"], case["vocab"], case["hidden"]
    seed = case.get("seed", 0) * 1_000_003 + rows * 131 + vocab * 7 + hidden_size
    gen = torch.Generator().manual_seed(seed % 2**63)
    hidden = (3.0 * torch.randn(rows, hidden_size, generator=gen)).to(dtype)
    weight = (torch.randn(vocab, hidden_size, generator=gen) / hidden_size**0.5).to(dtype)
    u = torch.randn(rows, generator=gen, dtype=torch.float64)
    v = torch.randn(vocab, generator=gen, dtype=torch.float64)
    return hidden, weight, u, v


def shown(case: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The rows, vocabulary ids and hidden columns whose values are judged: the first and the
    last of each, the others drawn from the case's seed."""
    gen = torch.Generator().manual_seed(case.get("seed", 0) % 2**63)
    return (
        _shown.spread(case["rows"], SHOWN, gen),
        _shown.spread(case["vocab"], SHOWN, gen),
        _shown.spread(case["hidden"], COLUMNS, gen),
    )


class HeadMeasure:
    """The measure, with ART's method: runs it on one input, remembers what the GEMM was
    given and the dtype it returned (for the check's detail)."""

    def __init__(self, trainer: Any, parallel_state: types.ModuleType | None = None) -> None:
        self.trainer = trainer  # what has ENTRY: ART's TrainerRank (:func:`run`)
        self.state = parallel_state  # Megatron's, stood in for: told the case's layout
        self.seen: set[tuple[str, str]] = set()
        self.out_dtypes: set[str] = set()
        # Every input's weights are kept for the search's life: in ART the head's weight is one
        # parameter for the process's life, so no later weight takes a freed one's storage (a
        # fix that caches its FP32 copy by storage and version, as real ones may, sees each
        # input's weight as the new tensor it is).
        self.alive: list[Any] = []

    def parallel_state(self, tp: int, tp_rank: int) -> None:
        """Megatron's ``parallel_state`` (the one-process stand-in) answers with the case's
        tensor-parallel size and rank: a head that asks sees the layout the case stands for."""
        if self.state is None or not hasattr(self.state, "used"):  # the real one: leave it
            return
        for name, value in (
            ("get_tensor_model_parallel_world_size", tp),
            ("get_tensor_model_parallel_rank", tp_rank),
        ):
            setattr(self.state, name, lambda *args, _v=value, **kwargs: _v)

    def __call__(self, case: dict[str, Any]) -> dict[str, Any]:
        """ART's logits at the shown rows x ids, and (grad on) the gradients of sum(G * logits)
        reaching the rows and the weight at the shown entries: numbers only."""
        hidden, weight, u, v = operands(case)
        hidden.requires_grad_(case["grad"] != "off")
        weight.requires_grad_(case["grad"] == "rows+weight")
        tp, tp_rank = _parallel(case)
        layer = StandInOutputLayer(
            weight if not case["tied"] else weight.detach().clone(), sequence_parallel=tp > 1
        )
        model = StandInModel(layer)
        self.alive.append((weight, layer))
        self.parallel_state(tp, tp_rank)
        try:
            # Entered at the call site: the head's statistics without the log-normaliser or
            # top-k (those read the logits; they do not make them), whose first output is the
            # local logits; a fix made there (in the caller) counts.
            logits = getattr(self.trainer, ENTRY)(
                model,
                hidden,
                output_weight=weight if case["tied"] else None,
                need_log_z=False,
                max_top_k=0,
            )[0]
        except TypeError as exc:
            return {"refused": str(exc)[:120]}
        finally:
            self.seen.update(layer.seen)
        self.out_dtypes.add(_name(logits.dtype))
        logits = logits.reshape(case["rows"], case["vocab"])
        rows, ids, cols = shown(case)
        raw: dict[str, Any] = {
            "dtype": _name(logits.dtype),
            "logits": logits.detach()[rows][:, ids].double().tolist(),
        }
        if case["grad"] == "off":
            return raw
        raw["requires_grad"] = logits.requires_grad
        if not logits.requires_grad:
            return raw
        ((logits.float() @ v.float()).double() * u).sum().backward()
        for key, leaf, picked in (("rows_grad", hidden, rows), ("weight_grad", weight, ids)):
            if leaf.requires_grad:
                grad = leaf.grad
                raw[key] = None if grad is None else grad[picked][:, cols].double().tolist()
        return raw


# The domain's bounds, which a case must keep to before the judge makes its operands.
CHOICES = {"dtype": tuple(DTYPES), "grad": GRADS, "tied": (True, False), "tp": TP_SIZES}
LIMITS = {
    "tp_rank": (0, max(TP_SIZES) - 1),
    "rows": (1, REAL_CHUNK),
    "vocab": (1, REAL_VOCAB),
    "hidden": (1, 2560),
    "seed": (0, 2**31),
}
MAX_WEIGHT = 2**21  # vocab x hidden: 1.3M at (512 ids, 2560), 0.6M at (151,936 ids, 4)


def judge(case: dict[str, Any], raw: Any) -> _domain.Failure | None:
    """The property on one input, from what ART's code returned (``raw``, as
    :class:`HeadMeasure` writes it) and the float64 oracle on the same operands (no ART)."""
    why = _shown.outside(case, CHOICES, LIMITS)
    if why is None and case["vocab"] * case["hidden"] > MAX_WEIGHT:
        why = "a weight past the domain's size"
    if why is None and case["tp_rank"] >= case["tp"]:
        why = "a tensor-parallel rank past the size"
    if why is not None:
        return _domain.Failure(why, "an input of the claim's domain")
    if not isinstance(raw, dict):
        return _domain.Failure("no measurement", "FP32 logits")
    if "refused" in raw:
        return _domain.Failure(f"refused: {raw['refused']}"[:120], "FP32 logits")
    hidden, weight, u, v = operands(case)
    rows, ids, cols = shown(case)
    h64, w64 = hidden.double(), weight.double()
    exact = h64[rows] @ w64[ids].T
    bound = 4 * math.sqrt(case["hidden"]) * EPS32 * (h64[rows].abs() @ w64[ids].abs().T)
    worst = _shown.worst(raw.get("logits"), exact, bound)
    if worst is None:
        return _domain.Failure("logits of the wrong shape", "FP32 logits")
    if worst > 1:
        return _domain.Failure(round(worst, 3), "1 (error / FP32 bound)")
    if case["grad"] == "off":
        return None
    if raw.get("requires_grad") is not True:
        return _domain.Failure("logits carry no gradient", "a gradient")
    # The gradient of sum(G * logits), G = u v^T: G @ W = u (v^T W) reaches the rows and
    # G^T @ H = v (u^T H) the weight; within 4 eps of the leaf's dtype times |G| @ |W|
    # (|G|^T @ |H|), plus 8 eps32 for v rounded to FP32 and G's entries to the logits' dtype.
    eps = torch.finfo(DTYPES[case["dtype"]]).eps
    leaves = [
        (
            "rows_grad",
            u[rows, None] * (v @ w64)[None, cols],
            u.abs()[rows, None] * (v.abs() @ w64.abs())[None, cols],
        )
    ]
    if case["grad"] == "rows+weight":
        leaves.append(
            (
                "weight_grad",
                v[ids, None] * (u @ h64)[None, cols],
                v.abs()[ids, None] * (u.abs() @ h64.abs())[None, cols],
            )
        )
    for key, exact_g, scale in leaves:
        if raw.get(key) is None:
            return _domain.Failure("no gradient reached the leaf", "a gradient")
        ratio = _shown.worst(raw[key], exact_g, 4 * eps * scale + 8 * EPS32 * scale)
        if ratio is None:
            return _domain.Failure("a gradient of the wrong shape", "a gradient")
        if ratio > 1:
            return _domain.Failure(round(ratio, 3), "1 (gradient error / 4 eps |G| @ |W|)")
    return None


def run(art: Any, seed: int = 0) -> dict[str, Any]:
    """ART's ``_local_logits_from_hidden_rows`` over the domain (artbot's plan when ``art``
    carries one; else the edges and ``SAMPLES`` draws); the first counterexample."""
    with _art_whole.whole(art) as whole:
        cls = getattr(whole.load(RELPATH), CLASS)
        line = getattr(cls, METHOD).__code__.co_firstlineno
        # An uninitialised TrainerRank: the method, and every method or module-level helper it
        # calls, resolve as in ART (the instance's attributes are set by __init__, not run).
        measure = HeadMeasure(cls.__new__(cls), _stand_in_parallel_state())
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
            measure=measure,
            judge=judge,
        )
        stand_ins = whole.said()
    return {
        "found": found,
        "seen": sorted(measure.seen),
        "out_dtypes": sorted(measure.out_dtypes),
        "where": f"{art.name}/{RELPATH}:{line}",
        "line": line,
        "stand_ins": stand_ins,
    }


def _stand_in_parallel_state() -> types.ModuleType | None:
    """Megatron's ``parallel_state`` as imported inside :func:`_art_whole.whole` (its
    one-process stand-in where Megatron is not installed)."""
    try:
        return importlib.import_module("megatron.core.parallel_state")
    except ImportError:
        return None


def describe(measured: dict[str, Any]) -> str:
    """What the GEMM was given, what came back, and where the property held or failed."""
    seen = ", ".join(f"{x} rows x {w} weight" for x, w in measured["seen"]) or "never called"
    return (
        f"GEMM given {seen}; logits returned in {', '.join(measured['out_dtypes']) or 'none'}; "
        + _simpler.said(measured["found"])
    )
