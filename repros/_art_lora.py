"""ART's LoRA wrapper built and run on CPU, for items 5 and 11's checks.

``megatron/lora.py`` imports Megatron and Transformer Engine, so it is not imported whole: its
``SelfAttentionLinearProjLoRA`` (the attention output projection's wrapper, anchored by the
audit) and everything of the file it names are compiled from the release's source
(``_art_partial``) and constructed as the release constructs them: its ``__init__`` builds the
``LoRA`` through ``_parallel_lora`` from the base layer's weight. The stand-ins:

- the base layer (``linear_proj``, a TE row-parallel linear in ART): a frozen weight in the
  training dtype; its output is the float64 product rounded once to the input's dtype, as a
  GPU GEMM with FP32 accumulation returns it; no bias;
- the provider: tensor-parallel size 1 (no reduction of the LoRA output);
- Megatron's ``parallel_state``: one process (rank 0, world size 1, no groups);
- the segmented-LoRA and expert-plan context variables: unset (one adapter, dense path).

Everything else the wrapper and its ``LoRA`` do (shapes, dtypes, initialisation, the forward,
the add) is ART's code as released.
"""

from __future__ import annotations

import ast
import contextvars
import functools
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import _art_partial
import _source
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

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        exact = x.detach().double() @ self.weight.double().T
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

    def leaves(self) -> dict[str, torch.nn.Parameter]:
        return {"A_T": self.wrapper.lora.A_T, "B_T": self.wrapper.lora.B_T}


def build(
    art: Any,
    *,
    in_features: int,
    out_features: int,
    rank: int,
    alpha: float,
    dtype: torch.dtype,
    seed: int = 0,
) -> BuiltLora:
    """ART's ``SelfAttentionLinearProjLoRA`` around a stand-in base layer in ``dtype``."""
    unset: contextvars.ContextVar[Any] = contextvars.ContextVar("artbot_unset", default=None)
    stand_ins = {
        "ps": _art_partial.SingleRank(),
        "_CURRENT_LORA_SEGMENTS": unset,
        "_CURRENT_EXPERT_ADAPTER_PLAN": unset,
    }
    module = _art_partial.PartialModule(art, RELPATH, stand_ins)
    if not module.has(WRAPPER):
        raise LookupError(f"{module.path} defines no {WRAPPER}")
    wrapper_cls = module.get(WRAPPER)
    gen = torch.Generator().manual_seed(seed)
    base = StandInRowLinear(in_features, out_features, dtype, gen)
    provider = SimpleNamespace(tensor_model_parallel_size=1, sequence_parallel=False)
    wrapper = wrapper_cls(PREFIX, base, rank, alpha, provider)
    return BuiltLora(
        wrapper,
        base,
        f"{module.path}:{module.line_of(WRAPPER)}",
        sorted(
            [
                "base layer (frozen weight, output rounded once to the input's dtype)",
                "provider (tensor-parallel size 1)",
                *(
                    {"ps": "Megatron parallel_state (one process)"}.get(n, f"{n} (unset)")
                    for n in sorted(module.stand_ins_used)
                ),
            ]
        ),
    )


def trainer_reads_main_grad(art: Any) -> bool:
    """Does the trainer's step read ``main_grad`` (TrainerRank's ``_reduce_dynamic_grads``, read
    with ``ast``)? 0.5.20-0.5.23 read ``param.grad``."""
    source = art.source("trainer_rank/_impl.py") or ""
    line = next(
        (
            n
            for n, text in enumerate(source.splitlines(), 1)
            if text.strip().startswith("def _reduce_dynamic_grads(")
        ),
        None,
    )
    if line is None:
        return False
    node = _source.block_at(source, line).node
    return any(
        (isinstance(n, ast.Attribute) and n.attr == "main_grad")
        or (isinstance(n, ast.Constant) and n.value == "main_grad")  # getattr(p, "main_grad")
        for n in ast.walk(node)
    )


def builder(
    art: Any, *, features: int, rank: int, alpha: float, seed: int = 0, b_std: float = 0.0
) -> Callable[[str], BuiltLora]:
    """:func:`build` square (``features`` in and out), once per dtype name (``"bfloat16"``), for
    a property run over a domain of dtypes. ``b_std``: B drawn with this std (generator seeded
    ``seed + 1``), as after the first steps (ART initialises it to zero)."""

    @functools.cache
    def built(dtype: str) -> BuiltLora:
        lora = build(
            art,
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
