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
- ``torch.distributed``: not initialised, or, for item 11's cases on ranks, initialised for 2
  or 8 ranks (:func:`ranks`, item 6's stand-in).

Everything else the wrapper and its ``LoRA`` do (shapes, dtypes, initialisation, hooks, the
forward, the add) is ART's code as released, in its own module.

:func:`accumulate` is item 5's measurement: backward calls through the wrapper, then
``TrainerRank._reduce_dynamic_grads`` (what the optimizer steps with), against the float64 sum
of each call's own gradient. :func:`lora_add` is item 11's: every wrapper of
:data:`RUN_WRAPPERS` (five of the seven with a ``base + adapter`` add; the MoE experts' FC1 and
FC2 run ART's QuACK grouped GEMM, which refuses CPU tensors) built around a stand-in of its TE
base layer (row, column or layer-norm column parallel linear) and run forward.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import _art_optimizer
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
        self.zero_output = False  # item 11's second pass: the wrapper's adapter alone

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        exact = x.detach().double() @ self._exact_t
        out = torch.zeros_like(exact.to(x.dtype)) if self.zero_output else exact.to(x.dtype)
        self.outputs.append(out)
        return out, None


@dataclass
class BuiltLora:
    wrapper: Any  # ART's SelfAttentionLinearProjLoRA
    base: StandInRowLinear
    where: str  # art/megatron/lora.py:<line> of the wrapper class
    stand_ins: list[str]

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


def _own_gradients(built: BuiltLora, x: torch.Tensor, upstream: torch.Tensor) -> list[torch.Tensor]:
    """One call's own gradient of each leaf, outside the code under test's hooks: the forward
    run with detached copies of the leaves in their own dtype (``torch.func.functional_call``;
    a hook registered on a leaf is not on its copy), differentiated with ``autograd.grad``."""
    names = {"A_T": "lora.A_T", "B_T": "lora.B_T"}
    copies = {names[n]: p.detach().clone().requires_grad_(True) for n, p in built.leaves().items()}
    out, _bias = torch.func.functional_call(built.wrapper, copies, (x,))
    return list(torch.autograd.grad(out, list(copies.values()), upstream.to(out.dtype)))


def accumulate(
    whole: _art_whole.Whole, trainer: Any, case: dict[str, Any], *, features: int, seed: int
) -> tuple[dict[str, Any], str, list[str]]:
    """A fresh wrapper (nothing staged from before) of ``case``'s dtype, rank and alpha, B as
    after the first steps; ``calls`` forward and backward passes of ``tokens`` tokens with
    upstream gradients of ``scale``; then ``trainer._reduce_dynamic_grads(..., scale_grads)``.
    Returns (raw, where, stand-ins): raw per leaf its dtype, the reduced sum's dtype, and the
    L2 norms of (reduced - exact) and of exact, exact the float64 sum of the calls' own
    gradients times ``scale_grads``."""
    dtype = getattr(torch, case["dtype"])
    lora = build(
        whole,
        in_features=features,
        out_features=features,
        rank=case["rank"],
        alpha=case["alpha"],
        dtype=dtype,
        seed=seed,
    )
    with torch.no_grad():  # B as after the first steps (ART starts it at zero)
        b_t = lora.leaves()["B_T"]
        b_t.copy_(0.02 * torch.randn(b_t.shape, generator=torch.Generator().manual_seed(1)))
    leaves = lora.leaves()
    gen = torch.Generator().manual_seed(case["calls"] * 101 + case["tokens"])
    truth = {name: torch.zeros(p.shape, dtype=torch.float64) for name, p in leaves.items()}
    for _ in range(case["calls"]):
        x = torch.randn(case["tokens"], features, generator=gen).to(dtype)
        upstream = (case["scale"] * torch.randn(case["tokens"], features, generator=gen)).to(dtype)
        for name, grad in zip(leaves, _own_gradients(lora, x, upstream), strict=True):
            truth[name] += grad.double()
        out, _bias = lora.wrapper(x)
        out.backward(upstream.to(out.dtype))
    reduced = trainer._reduce_dynamic_grads(list(leaves.values()), scale_grads=case["scale_grads"])
    raw: dict[str, Any] = {"leaves": {}}
    for (name, param), summed in zip(leaves.items(), reduced, strict=True):
        exact = truth[name] * case["scale_grads"]
        raw["leaves"][name] = {
            "leaf_dtype": str(param.dtype).removeprefix("torch."),
            "sum_dtype": str(summed.dtype).removeprefix("torch."),
            "error": float((summed.double() - exact).norm()),
            "exact": float(exact.norm()),
        }
    return raw, lora.where, lora.stand_ins


# Item 11: every wrapper of megatron/lora.py whose LoRA runs on a CPU, around a stand-in of
# its Transformer Engine base layer. TE's column-parallel linears (``TEColumnParallelLinear``,
# ``TELayerNormColumnParallelLinear``) as ART's wrappers call them: ``base(x)`` returns
# ``(output, bias)``, the output in the input's dtype (an FP32-accumulated GEMM rounded once);
# the layer-norm one, when the wrapper sets ``return_layernorm_output``, returns
# ``((output, normed input), bias)``, the normed input (RMSNorm) in the input's dtype too.
# The stand-in subclasses the name lora.py imported, so ART's ``isinstance`` tests resolve.
def _te_base(module: Any, te_name: str) -> type:
    te_cls = getattr(module, te_name)

    class StandInTeLinear(te_cls):  # type: ignore[misc, valid-type]
        def __init__(self, in_features: int, out_features: int, dtype: torch.dtype, gen: Any):
            weight = torch.randn(out_features, in_features, generator=gen) / in_features**0.5
            self.in_features, self.out_features = in_features, out_features
            self.weight = torch.nn.Parameter(weight.to(dtype), requires_grad=False)
            self._exact_t = self.weight.detach().double().T
            self.return_layernorm_output = False
            self.zero_output = False  # the run's second pass: the wrapper's adapter alone
            self.outputs: list[torch.Tensor] = []

        def __call__(self, x: torch.Tensor) -> tuple[Any, None]:
            normed = x
            if te_name == "TELayerNormColumnParallelLinear":
                wide = x.detach().double()
                normed = (wide * torch.rsqrt(wide.square().mean(-1, keepdim=True) + 1e-6)).to(
                    x.dtype
                )
            out = (normed.detach().double() @ self._exact_t).to(x.dtype)
            out = torch.zeros_like(out) if self.zero_output else out
            self.outputs.append(out)
            return ((out, normed) if self.return_layernorm_output else out), None

    StandInTeLinear.__qualname__ = StandInTeLinear.__name__ = f"StandIn{te_name}"
    return StandInTeLinear


def _qkv(module: Any, f: int, rank: int, alpha: float, dtype: torch.dtype, gen: Any) -> Any:
    heads, groups, head_dim = 4, 2, f // 4  # q: f wide, k and v: f / 2 each
    base = _te_base(module, "TELayerNormColumnParallelLinear")(f, 2 * f, dtype, gen)
    provider = SimpleNamespace(
        kv_channels=head_dim,
        num_query_groups=groups,
        num_attention_heads=heads,
        attention_output_gate=False,
        tensor_model_parallel_size=1,
        sequence_parallel=False,
    )
    cls = module.SelfAttentionLinearQKVLoRA
    return cls("model.layers.0.self_attn", base, rank, alpha, provider, set()), base


def _gdn(module: Any, f: int, rank: int, alpha: float, dtype: torch.dtype, gen: Any) -> Any:
    net = SimpleNamespace(num_value_heads=4, qk_dim=f // 2, v_dim=f)  # qkv 2f, z f, beta+alpha 8
    base = _te_base(module, "TELayerNormColumnParallelLinear")(f, 3 * f + 8, dtype, gen)
    cls = module.GatedDeltaNetInProjLoRA
    return cls("model.layers.0.linear_attn", base, net, rank, alpha), base


def _componentwise(
    module: Any, f: int, rank: int, alpha: float, dtype: torch.dtype, gen: Any
) -> Any:
    base = _te_base(module, "TEColumnParallelLinear")(f, 2 * f, dtype, gen)
    cls = module.ComponentwiseColumnParallelLinearLoRA
    return cls("model.layers.0.linear_attn.in_proj", base, (f // 2, f // 2, f), rank, alpha), base


def _proj(
    module: Any, f: int, rank: int, alpha: float, dtype: torch.dtype, gen: Any, in_f: int = 0
) -> Any:
    base = StandInRowLinear(in_f or f, f, dtype, gen)
    provider = SimpleNamespace(tensor_model_parallel_size=1, sequence_parallel=False)
    return module.SelfAttentionLinearProjLoRA(PREFIX, base, rank, alpha, provider), base


def _shared_fc1(
    module: Any, f: int, rank: int, alpha: float, dtype: torch.dtype, gen: Any, in_f: int = 0
) -> Any:
    base = StandInRowLinear(in_f or f, 2 * f, dtype, gen)  # gate and up, f each
    cls = module.SharedExpertsLinearFC1LoRA
    return cls("model.layers.0.mlp.shared_experts.linear_fc1", base, rank, alpha), base


# name -> builder(lora.py, features, rank, alpha, dtype, generator) -> (ART's wrapper, base);
# the two of a row-linear base also take the input width apart (``in_f``, default ``features``).
RUN_WRAPPERS: dict[str, Callable[..., Any]] = {
    WRAPPER: _proj,
    "SharedExpertsLinearFC1LoRA": _shared_fc1,
    "SelfAttentionLinearQKVLoRA": _qkv,
    "GatedDeltaNetInProjLoRA": _gdn,
    "ComponentwiseColumnParallelLinearLoRA": _componentwise,
}
BASE_STAND_INS = (
    "base layers: TE's row- and column-parallel linears, and its layer-norm column-parallel "
    "linear (RMSNorm), as the wrappers call them: output (and normed input) in the input's "
    "dtype, an FP32-accumulated GEMM rounded once"
)


# Names of ``torch.distributed`` answered by :class:`_art_optimizer.Ranks` while a case runs on
# ranks (item 11): ART's lora.py asks ``torch.distributed`` itself whether it is initialised.
RANKS_API = (
    "is_available",
    "is_initialized",
    "get_world_size",
    "get_rank",
    "all_gather",
    "all_reduce",
)


@contextlib.contextmanager
def ranks(world: int) -> Iterator[None]:
    """``torch.distributed`` initialised with ``world`` ranks holding the same tensors (item 6's
    :class:`_art_optimizer.Ranks`), set on the module itself, so every way of reaching it (the
    attribute of ``torch``, ``import torch.distributed as dist``, a name looked up at call time)
    sees it; 1: left as it is (not initialised). Megatron's ``parallel_state`` stays one process
    (tensor-parallel size 1: ART's default topology puts a node's GPUs in context parallelism)."""
    if world <= 1:
        yield
        return
    stand_in = _art_optimizer.Ranks(world)
    dist = torch.distributed
    saved = {name: getattr(dist, name) for name in RANKS_API}
    try:
        for name in RANKS_API:
            setattr(dist, name, getattr(stand_in, name))
        yield
    finally:
        for name, value in saved.items():
            setattr(dist, name, value)


def lora_add(whole: _art_whole.Whole, case: dict[str, Any]) -> dict[str, Any]:
    """Item 11's measurement: ART's ``case["wrapper"]`` (built by lora.py's own ``__init__``
    around a stand-in base) run forward twice on the same input: with the base's output, and
    with it zero (what is left is the wrapper's adapter output exactly, ``0 + a`` being exact in
    every dtype). Returns the output's dtype and the L2 norms of ``(out - base) - adapter``,
    of the adapter output and of the base output (float64 on the stored values). The case's
    ``world_size`` ranks (:func:`ranks`; absent: 1) hold while the wrapper is built and run;
    its ``in_features`` (absent: ``features``) is the input width of a row-linear base."""
    with ranks(int(case.get("world_size") or 1)):
        return _lora_add(whole, case)


def _lora_add(whole: _art_whole.Whole, case: dict[str, Any]) -> dict[str, Any]:
    module = whole.load(RELPATH)
    dtype = getattr(torch, case["dtype"])
    gen = torch.Generator().manual_seed(case["tokens"] * 31 + case["rank"])
    # What lora.py's own __init__ draws (its A factors) comes from torch's global generator:
    # seeded here from the case, so one case measures the same whatever ran before it.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(case["tokens"] * 31 + case["rank"])
        wide = {"in_f": int(case["in_features"])} if case.get("in_features") else {}
        wrapper, base = RUN_WRAPPERS[case["wrapper"]](
            module, case["features"], case["rank"], 32.0, dtype, gen, **wide
        )
    loras = [m for m in wrapper.modules() if isinstance(m, module.LoRA)]
    with torch.no_grad():
        for factor in loras:
            b_t = factor.B_T
            b_t.copy_((case["b_std"] * torch.randn(b_t.shape, generator=gen)).to(b_t.dtype))
    width = int(case.get("in_features") or case["features"])
    x = torch.randn(case["tokens"], 1, width, generator=gen).to(dtype)
    train = case["mode"] == "train"
    wrapper.train(train)
    outs = []
    for zero in (False, True):
        base.zero_output = zero
        with torch.set_grad_enabled(train):
            out, _bias = wrapper(x.clone().requires_grad_(train))
        outs.append(out.detach().double())
    full, adapter = outs
    base_out = base.outputs[0].double()
    return {
        "out_dtype": str(out.dtype).removeprefix("torch."),
        "lost": float(((full - base_out) - adapter).norm()),
        "adapter": float(adapter.norm()),
        "base": float(base_out.norm()),
    }
