"""Item 4's check: ART's LM-head function run on CPU around a stand-in output layer.

``TrainerRank._local_logits_from_hidden_rows`` (``trainer_rank/_impl.py``) takes the logits of
a chunk of hidden rows from ``model.output_layer(hidden.unsqueeze(1), weight=output_weight,
...)`` and returns them through ``model._scale_logits`` and ``_batch_seq_logits``. The method is
compiled from the release's source (``_art_partial``; the file needs Python 3.12 and Megatron)
and called with:

- a stand-in ``self`` (the method uses none of it) and model: ``_scale_logits`` returns the
  logits as given (Megatron scales only when a model sets a logit multiplier);
- a stand-in output layer that records the dtypes of the input and weight it is given and
  returns their product as a GPU GEMM with FP32 accumulation does: the float64 product rounded
  once to the operands' dtype. Operands of two dtypes are refused, as ``F.linear`` refuses them.
  Its own weight (used when ``weight`` is None) is BF16.

The hidden rows and the weight are BF16, as in BF16 training; the logits ART returns are
compared with the float64 product of the same BF16 operands. It is run twice: with the weight
passed (tied embeddings) and with none (the layer's own).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import _art_partial
import torch

RELPATH = "trainer_rank/_impl.py"
CLASS = "TrainerRank"
METHOD = "_local_logits_from_hidden_rows"
ROWS, HIDDEN, VOCAB = 64, 256, 512
# The logits' RMS error relative to their RMS: FP32 leaves about 1e-7, FP16 about 3e-4, BF16
# about 2e-3. Fixed means FP32 (or better) logits out of the GEMM.
FP32_LEVEL = 1e-5


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
        return (x.double() @ used.double().T).to(x.dtype), None


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def run(art: Any, seed: int = 0) -> dict[str, Any]:
    """ART's ``_local_logits_from_hidden_rows`` on BF16 rows, with and without a weight."""
    module = _art_partial.PartialModule(art, RELPATH)
    method, line = module.method(CLASS, METHOD)
    gen = torch.Generator().manual_seed(seed)
    hidden = (3.0 * torch.randn(ROWS, HIDDEN, generator=gen)).bfloat16()
    weight = (torch.randn(VOCAB, HIDDEN, generator=gen) / HIDDEN**0.5).bfloat16()
    exact = hidden.double() @ weight.double().T
    cases = {}
    for case, passed in (("weight passed", weight), ("layer's own weight", None)):
        layer = StandInOutputLayer(weight.clone())
        model = SimpleNamespace(output_layer=layer, _scale_logits=lambda logits: logits)
        try:
            logits = method(SimpleNamespace(), model, hidden.clone(), output_weight=passed)
        except TypeError as exc:
            cases[case] = {"refused": str(exc), "seen": layer.seen}
            continue
        got = logits.double().reshape(exact.shape)
        rms = float((got - exact).square().mean().sqrt() / exact.square().mean().sqrt())
        cases[case] = {"rel_rms": rms, "dtype": _name(logits.dtype), "seen": layer.seen}
    return {"cases": cases, "where": f"{module.path}:{line}", "line": line}


def rounded(case: dict[str, Any]) -> bool:
    """The logits carry more than FP32 rounding (or the GEMM could not be run as written)."""
    return "refused" in case or case["rel_rms"] > FP32_LEVEL


def describe(cases: dict[str, dict[str, Any]]) -> str:
    """Each case's GEMM operands and logits, cases that measured alike said once."""
    said: dict[str, list[str]] = {}
    for name, case in cases.items():
        seen = ", ".join(f"{x} rows x {w} weight" for x, w in case["seen"]) or "never called"
        if "refused" in case:
            text = f"GEMM given {seen}, refused ({case['refused']})"
        else:
            text = (
                f"GEMM given {seen}; logits returned in {case['dtype']}, RMS error "
                f"{case['rel_rms']:.1g} of their RMS"
            )
        said.setdefault(text, []).append(name)
    return "; ".join(f"{' and '.join(names)}: {text}" for text, names in said.items())
