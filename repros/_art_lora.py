"""ART's LoRA wrapper built and run on CPU, for items 5 and 11's checks.

``megatron/lora.py`` is imported whole (``_art_whole``: every statement of the file run in
order, Megatron and Transformer Engine stood in for at the import boundary), and its
``SelfAttentionLinearProjLoRA`` (the attention output projection's wrapper, anchored by the
audit) is constructed as the release constructs it: its ``__init__`` builds the ``LoRA`` through
``_parallel_lora`` from the base layer's weight. The stand-ins:

- the base layer (``linear_proj``, a TE row-parallel linear in ART): a frozen weight in the
  training dtype; its output is the float64 product rounded once to the input's dtype, as a
  GPU GEMM with FP32 accumulation returns it; no bias;
- the provider: tensor-parallel size 1 (no reduction of the LoRA output);
- Megatron's ``parallel_state``: one process (``_art_whole``).

Everything else the wrapper and its ``LoRA`` do (shapes, dtypes, initialisation, hooks, the
forward, the add) is ART's code as released, in its own module.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import _art_whole
import torch

RELPATH = "megatron/lora.py"
WRAPPER = "SelfAttentionLinearProjLoRA"
PREFIX = "model.layers.0.self_attn.o_proj"


class StandInRowLinear(torch.nn.Module):
    """A frozen base projection: ``weight`` (out, in) in ``dtype``; returns (output, None)."""

    def __init__(self, in_features: int, out_features: int, dtype: torch.dtype, gen: Any):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        weight = torch.randn(out_features, in_features, generator=gen) / in_features**0.5
        self.weight = torch.nn.Parameter(weight.to(dtype), requires_grad=False)
        self.outputs: list[torch.Tensor] = []
        self._exact_t = self.weight.detach().double().T  # frozen: converted once

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        exact = x.detach().double() @ self._exact_t
        out = exact.to(x.dtype)
        self.outputs.append(out)
        return out, None


@dataclass
class BuiltLora:
    wrapper: Any  # ART's SelfAttentionLinearProjLoRA
    base: StandInRowLinear
    where: str  # art/megatron/lora.py:<line> of the wrapper class
    stand_ins: list[str]

    @property
    def lora(self) -> Any:
        return self.wrapper.lora

    @property
    def loras(self) -> list[Any]:
        """The wrapper's LoRAs, in the order their outputs are joined (gate, then up)."""
        found = [getattr(self.wrapper, n, None) for n in ("lora", "gate_lora", "up_lora")]
        return [f for f in found if f is not None]

    def leaves(self) -> dict[str, torch.nn.Parameter]:
        return {"A_T": self.wrapper.lora.A_T, "B_T": self.wrapper.lora.B_T}


def build(
    whole: _art_whole.Whole,
    *,
    in_features: int,
    out_features: int,
    rank: int,
    alpha: float,
    dtype: torch.dtype,
    seed: int = 0,
) -> BuiltLora:
    """ART's ``SelfAttentionLinearProjLoRA`` around a stand-in base layer in ``dtype``, from
    ``megatron/lora.py`` imported whole (inside ``_art_whole.whole``)."""
    module = whole.load(RELPATH)
    wrapper_cls = getattr(module, WRAPPER, None)
    if wrapper_cls is None:
        raise LookupError(f"{whole.art.name}/{RELPATH} defines no {WRAPPER}")
    gen = torch.Generator().manual_seed(seed)
    base = StandInRowLinear(in_features, out_features, dtype, gen)
    provider = SimpleNamespace(tensor_model_parallel_size=1, sequence_parallel=False)
    wrapper = wrapper_cls(PREFIX, base, rank, alpha, provider)
    line = _line_of(wrapper_cls)
    return BuiltLora(
        wrapper,
        base,
        f"{whole.art.name}/{RELPATH}:{line}",
        [
            "base layer (frozen weight, output rounded once to the input's dtype)",
            "provider (tensor-parallel size 1)",
            *whole.said(),
        ],
    )


@functools.cache
def _line_of(cls: type) -> int:
    return inspect.getsourcelines(cls)[1]


def builder(
    whole: _art_whole.Whole,
    *,
    features: int,
    rank: int,
    alpha: float,
    seed: int = 0,
    b_std: float = 0.0,
) -> Callable[[str], BuiltLora]:
    """:func:`build` square (``features`` in and out), once per dtype name (``"bfloat16"``), for
    a property run over a domain of dtypes. ``b_std``: B drawn with this std (generator seeded
    ``seed + 1``), as after the first steps (ART initialises it to zero)."""

    @functools.cache
    def built(dtype: str) -> BuiltLora:
        lora = build(
            whole,
            in_features=features,
            out_features=features,
            rank=rank,
            alpha=alpha,
            dtype=getattr(torch, dtype),
            seed=seed,
        )
        if b_std:
            gen = torch.Generator().manual_seed(seed + 1)
            with torch.no_grad():
                b_t = lora.leaves()["B_T"]
                b_t.copy_((b_std * torch.randn(b_t.shape, generator=gen)).to(b_t.dtype))
        return lora

    return built


def shared_fc1_builder(
    whole: _art_whole.Whole, *, features: int, rank: int, alpha: float, seed: int = 0
) -> Callable[[str], BuiltLora]:
    """ART's ``SharedExpertsLinearFC1LoRA`` (gated: a gate and an up LoRA) around a stand-in
    column linear of ``features`` in and ``2 features`` out, once per dtype name."""

    @functools.cache
    def built(dtype: str) -> BuiltLora:
        module = whole.load(RELPATH)
        cls = module.SharedExpertsLinearFC1LoRA
        gen = torch.Generator().manual_seed(seed)
        base = StandInRowLinear(features, 2 * features, getattr(torch, dtype), gen)
        wrapper = cls("model.layers.0.mlp.shared_experts.linear_fc1", base, rank, alpha)
        return BuiltLora(
            wrapper,
            base,
            f"{whole.art.name}/{RELPATH}:{_line_of(cls)}",
            ["base layer (frozen weight, output rounded once to the input's dtype)", *whole.said()],
        )

    return built
