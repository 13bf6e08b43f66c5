"""Audit item 11: the LoRA delta is added to the BF16 base output in BF16, so a delta below half
a BF16 spacing of the base rounds away in the forward pass. This test holds the behaviour the
audit's suggested comparison measures: the delta added in FP32, so that ``output - base`` is the
LoRA's own output.

The audit does not ask for that behaviour: it says "probably leave it" (the BF16 add matches
vLLM) and proposes only the comparison. So the test is a non-strict xfail: present in
openpipe-art 0.5.20, 0.5.21 and 0.5.23 (76% of a delta 1.1e-3 of the base is lost), it reports
an unexpected pass (XPASS) if the add is made in FP32, without failing ART's suite.
CPU only: ART's attention output projection wrapper (``SelfAttentionLinearProjLoRA``) around a
frozen BF16 stand-in for Transformer Engine's layer.

Domain: the attention output projection's wrapper; model dtype bfloat16; 32 tokens; a delta about
1e-3 of the base; 256 features on one process, and 4,096 on 8 ranks with torch.distributed
initialised (Qwen3-8B's hidden size; ART's Megatron training runs initialised: a stand-in
answering for 8 ranks). Oracle: an FP32 add (the LoRA's own output). Tolerance: the share of the
delta lost at most 8 eps32 |base| / |delta|, what an FP32 add loses, as artbot's check holds it
(which also runs four more wrappers, FP16, 1-8,192 tokens, deltas 1e-5 to 1e-2, widths up to the
MLP's 2 x 28,672).
"""

import ast
import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

try:  # torch and ART's optional dependencies may be absent where ART's tests run: skip
    import torch
except ModuleNotFoundError as missing:  # one of ART's own modules missing is a failure
    if (missing.name or "art").partition(".")[0] == "art":
        raise
    pytest.skip(f"{missing.name} is not installed", allow_module_level=True)

# --- ART's LoRA, loaded from its source (megatron/lora.py imports Megatron-Core and Transformer
# Engine at the top, which need a GPU). Only the definitions the test needs are run, with every
# top-level definition of the file they name, in file order under the file's own name and line
# numbers: the module's import-time hooks are not run. An import that fails here binds a
# placeholder that raises if the code uses it; Megatron's parallel_state is one process.


class _Unavailable:
    """A name whose import failed here: harmless in an annotation, an error on any use."""

    def __init__(self, name: str, why: BaseException) -> None:
        self._name, self._why = name, why

    def __getattr__(self, attr: str) -> object:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise RuntimeError(f"ART's code used {self._name}, not importable here: {self._why!r}")

    def __call__(self, *args: object, **kwargs: object) -> object:
        return self.__getattr__("called")

    def __or__(self, other: object) -> object:  # ``X | None`` in an annotation
        return self

    __ror__ = __or__


class _OneProcess:
    """Megatron's parallel_state on one process: rank 0, world size 1, no process groups."""

    def __getattr__(self, name: str) -> object:
        for suffix, value in (("_rank", 0), ("_world_size", 1), ("_group", None)):
            if name.endswith(suffix):
                return lambda *args, **kwargs: value
        raise AttributeError(name)


def art_lora(*names: str) -> tuple[object, ...]:
    """The top-level definitions ``names`` of ART's ``megatron/lora.py``, run as said above."""
    spec = importlib.util.find_spec("art.megatron.lora")
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"), spec.origin)
    defined: dict[str, ast.stmt] = {}
    imported: dict[str, ast.stmt] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                imported[alias.asname or alias.name.split(".")[0]] = stmt
        elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            defined[stmt.name] = stmt
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                if isinstance(target, ast.Name):
                    defined[target.id] = stmt
    namespace: dict[str, object] = {"__name__": "art_megatron_lora", "ps": _OneProcess()}
    namespace["__package__"] = spec.parent
    wanted: dict[int, ast.stmt] = {}
    todo, seen = list(names), set()
    while todo:
        name = todo.pop()
        if name in seen or name in namespace:
            continue
        seen.add(name)
        if name in defined:
            wanted[defined[name].lineno] = defined[name]
            todo += [n.id for n in ast.walk(defined[name]) if isinstance(n, ast.Name)]
        elif name in imported:
            scratch: dict[str, object] = {"__package__": spec.parent, "__name__": spec.name}
            try:
                exec(compile(ast.Module([imported[name]], []), spec.origin, "exec"), scratch)
                namespace[name] = scratch[name]
            except Exception as exc:  # Megatron, Transformer Engine, GPU kernels
                namespace[name] = _Unavailable(name, exc)
    body = ast.Module([wanted[line] for line in sorted(wanted)], [])
    exec(compile(body, spec.origin, "exec"), namespace)
    return tuple(namespace[name] for name in names)


class BF16RowLinear(torch.nn.Module):
    """Stands in for TERowParallelLinear: a frozen BF16 weight; the output is the product
    rounded once to BF16, as a GPU GEMM with FP32 accumulation returns it."""

    def __init__(self, features: int, gen: torch.Generator) -> None:
        super().__init__()
        self.in_features = self.out_features = features
        weight = torch.randn(features, features, generator=gen) / features**0.5
        self.weight = torch.nn.Parameter(weight.bfloat16(), requires_grad=False)
        self.outputs: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        self.outputs.append((x.double() @ self.weight.double().T).to(x.dtype))
        return self.outputs[-1], None


TOKENS, RANK = 32, 8


def initialise_ranks(monkeypatch: pytest.MonkeyPatch, world: int) -> None:
    """torch.distributed initialised with ``world`` ranks (1: left as it is); Megatron's
    parallel_state stays one process (tensor-parallel size 1, ART's default topology)."""
    if world > 1:
        dist = torch.distributed
        monkeypatch.setattr(dist, "is_available", lambda: True)
        monkeypatch.setattr(dist, "is_initialized", lambda: True)
        monkeypatch.setattr(dist, "get_world_size", lambda *args, **kwargs: world)
        monkeypatch.setattr(dist, "get_rank", lambda *args, **kwargs: 0)


@pytest.mark.xfail(
    strict=False, raises=AssertionError, reason="audit item 11: the audit suggests leaving it"
)
@pytest.mark.parametrize(("features", "world"), [(256, 1), (4096, 8)])
def test_a_small_lora_delta_survives_the_add(
    monkeypatch: pytest.MonkeyPatch, features: int, world: int
) -> None:
    initialise_ranks(monkeypatch, world)
    (wrapper_cls,) = art_lora("SelfAttentionLinearProjLoRA")
    gen = torch.Generator().manual_seed(0)
    provider = SimpleNamespace(tensor_model_parallel_size=1, sequence_parallel=False)
    base = BF16RowLinear(features, gen)
    wrapper = wrapper_cls("model.layers.0.self_attn.o_proj", base, RANK, 32.0, provider)
    with torch.no_grad():  # B early in training: a delta about 1e-3 of the base output
        a_t, b_t = wrapper.lora.A_T, wrapper.lora.B_T  # drawn here, not by torch's global RNG
        a_t.copy_(torch.randn(a_t.shape, generator=gen) / features**0.5)
        b_t.copy_(1e-4 * torch.randn(b_t.shape, generator=gen))
        x = torch.randn(TOKENS, features, generator=gen).bfloat16()
        out, _bias = wrapper(x)
        delta = wrapper.lora(x).double()  # the LoRA's own output, as ART computes it
    kept = out.double() - base.outputs[0].double()
    lost = float((kept - delta).norm() / delta.norm())
    ratio = float(delta.norm() / base.outputs[0].double().norm())
    bound = 8 * torch.finfo(torch.float32).eps / ratio  # 8 eps32 |base| / |delta|
    assert lost <= bound, (
        f"{lost:.0%} of a delta {ratio:.0e} of the base lost in the {out.dtype} add "
        f"(an FP32 add: {bound:.1e})"
    )
