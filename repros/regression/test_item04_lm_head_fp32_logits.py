"""Audit item 4: TrainerRank's LM head (``TrainerRank._local_logits_from_hidden_rows``) gives
Megatron's output layer the BF16 hidden rows and weight, so the GEMM returns the logits rounded
to BF16 before the FP32 log-softmax. An FP32-output GEMM for the head chunk gives logits that
carry FP32 precision, with the rows requiring grad (training) or not, for a BF16 or an FP16
model, with the weight passed or the layer's own, for chunks over a small and over Qwen3's
151,936-id vocabulary, with sequence parallelism on or off: this test asserts that. Domain:
dtype bfloat16/float16; weight passed or the layer's own; sequence parallelism on and off; vocab
512 and 151,936. Oracle: float64 (the same operands' product). Tolerance:
the FP32 bound of an FP32-accumulated dot product, 4 sqrt(hidden) eps(fp32) (|H| @ |W|), on every
logit, as artbot's check holds it.

The audit does not decide this fix: it asks for a GPU A/B of an FP32-output head (the trainer /
vLLM logprob gap, and the memory its admission must price), not for FP32 logits. So the test is
a non-strict xfail: present in openpipe-art 0.5.20, 0.5.21 and 0.5.23 (the logits' relative
error is 1.7e-3, BF16's), it reports an unexpected pass (XPASS) once the head gives FP32
logits, without failing ART's suite; it becomes a plain test if that is the behaviour chosen.
CPU only: ``trainer_rank/_impl.py`` is imported whole (the GPU packages it imports are stood in
for where they are not installed, Megatron-Core's ``parallel_state`` as one process; on a Python
older than 3.12 its ``type X = ...`` statements run as ``X = ...``), so a fix through a
module-level helper or constant runs as in ART. The method is called on an uninitialised
``TrainerRank`` around a stand-in for Megatron's output layer (named as Megatron's
``ColumnParallelLinear``, with its ``sequence_parallel`` on or off as ART's provider sets it)
that returns the product of what it is given rounded once to the operands' dtype, as a GPU GEMM
with FP32 accumulation stores it, and refuses operands of two dtypes, as ``F.linear`` does.
"""

import ast
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import re
import sys
import types
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

try:  # torch and ART's optional dependencies may be absent where ART's tests run: skip
    import torch
except ModuleNotFoundError as missing:  # one of ART's own modules missing is a failure
    if (missing.name or "art").partition(".")[0] == "art":
        raise
    pytest.skip(f"{missing.name} is not installed", allow_module_level=True)


# --- ART's modules imported whole. megatron/lora.py imports Megatron-Core and Transformer Engine
# (and GPU kernels) at the top, which need a GPU; where a package is not installed, a stand-in
# module answers each name with an empty class that takes any class-level call (ART registers
# its types with Megatron-Bridge at import), and Megatron's parallel_state is one process.
GPU_PACKAGES = ("megatron", "transformer_engine", "quack", "cutlass", "cuda", "triton")
PARALLEL_STATE = "megatron.core.parallel_state"


class _AnyCall(type):
    def __getattr__(cls, name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: None


class _StandInModule(types.ModuleType):
    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        if f"{self.__name__}.{name}" == PARALLEL_STATE:
            return importlib.import_module(PARALLEL_STATE)
        made = _AnyCall(name, (), {"__init__": lambda self, *args, **kwargs: None})
        setattr(self, name, made)
        return made


class _OneProcess(types.ModuleType):
    """Megatron's parallel_state on one process: rank 0, world size 1, no process groups."""

    def __getattr__(self, name: str) -> object:
        for suffix, value in (("_rank", 0), ("_world_size", 1), ("_group", None)):
            if name.endswith(suffix):
                return lambda *args, **kwargs: value
        raise AttributeError(name)


class _WholeModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Stand-ins for absent GPU packages; ART's files that this Python cannot parse get their
    ``type X = ...`` statements run as ``X = ...`` (nothing else of them changes)."""

    def __init__(self, absent: set[str]) -> None:
        self.absent = absent

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        top = fullname.split(".")[0]
        if top in self.absent:
            spec = importlib.machinery.ModuleSpec(fullname, self, is_package=True)
            spec.loader_state = "stand-in"
            return spec
        if top != "art":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.origin and spec.origin.endswith(".py"):
            with open(spec.origin, encoding="utf-8") as file:
                source = file.read()
            try:
                ast.parse(source)
            except SyntaxError:
                spec.loader, spec.loader_state = self, source
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        if spec.loader_state != "stand-in":
            return None
        made = (_OneProcess if spec.name == PARALLEL_STATE else _StandInModule)(spec.name)
        made.__path__ = []  # a package: its submodules come from here too
        return made

    def exec_module(self, module: types.ModuleType) -> None:
        spec = module.__spec__
        if spec is None or spec.loader_state == "stand-in":
            return
        source = re.sub(r"(?m)^(\s*)type (\w+) = ", r"\1\2 = ", spec.loader_state)
        exec(compile(source, spec.origin, "exec"), module.__dict__)


@contextlib.contextmanager
def art_whole() -> Iterator[None]:
    finder = _WholeModules({top for top in GPU_PACKAGES if importlib.util.find_spec(top) is None})
    # A module a harness made of a few definitions cut from the file (no loader) is not the
    # module: import the file whole while the test runs, and put the cut one back after.
    cut = {
        name: sys.modules.pop(name)
        for name in ("art.trainer_rank._impl", "art.megatron.lora")
        if name in sys.modules and getattr(sys.modules[name], "__loader__", None) is None
    }
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        sys.modules.update(cut)
        for key in [k for k in sys.modules if k.split(".")[0] in finder.absent]:
            del sys.modules[key]


class GemmOutputLayer:
    """Megatron's output layer (a ColumnParallelLinear) on one rank: the rows times the weight
    (the one passed, else its own), accumulated in FP32 and rounded once to the operands'
    dtype. ``sequence_parallel`` as ART's provider sets it (on when tensor parallelism is)."""

    __module__ = "megatron.core.tensor_parallel.layers"  # named as Megatron's class is
    __qualname__ = "ColumnParallelLinear"

    def __init__(self, weight: torch.Tensor, sequence_parallel: bool) -> None:
        self.weight = weight
        self.sequence_parallel = sequence_parallel

    def __call__(
        self, x: torch.Tensor, weight: torch.Tensor | None = None, **_: object
    ) -> tuple[torch.Tensor, None]:
        weight = self.weight if weight is None else weight
        if x.dtype != weight.dtype:
            raise TypeError(f"the GEMM was given {x.dtype} rows and a {weight.dtype} weight")
        return (x.float() @ weight.float().T).to(x.dtype), None  # FP32 accumulation


ROWS, HIDDEN, VOCAB = 64, 256, 512


SHAPES = [(ROWS, HIDDEN, VOCAB), (64, 8, 151_936)]  # (rows, hidden, vocabulary): Qwen3's too


@pytest.mark.xfail(
    strict=False, raises=AssertionError, reason="audit item 4 is open; the audit decides no fix"
)
@pytest.mark.parametrize("tied", [True, False], ids=["weight passed", "layer's own weight"])
def test_head_logits_carry_fp32_precision(tied: bool) -> None:
    # Over the domain in one test: a head that is FP32 for one dtype, grad mode, chunk size or
    # parallel layout only is not.
    with art_whole():
        for dtype in (torch.bfloat16, torch.float16):
            for grad in (False, True):
                for sequence_parallel in (False, True):
                    for rows, hidden_size, vocab in SHAPES:
                        check(tied, grad, dtype, sequence_parallel, rows, hidden_size, vocab)


def check(
    tied: bool,
    grad: bool,
    dtype: torch.dtype,
    sequence_parallel: bool,
    rows: int,
    hidden_size: int,
    vocab: int,
) -> None:
    impl = importlib.import_module("art.trainer_rank._impl")
    # An uninitialised TrainerRank: the method, the methods and module-level helpers it calls
    # are ART's own. Entered at the head's call site (its statistics without the
    # log-normaliser or top-k, whose first output is the local logits), so a fix made in the
    # caller counts too.
    trainer = impl.TrainerRank.__new__(impl.TrainerRank)
    gen = torch.Generator().manual_seed(0)
    hidden = (3.0 * torch.randn(rows, hidden_size, generator=gen)).to(dtype)  # logits to ~50
    weight = (torch.randn(vocab, hidden_size, generator=gen) / hidden_size**0.5).to(dtype)
    hidden.requires_grad_(grad)
    layer = GemmOutputLayer(weight, sequence_parallel)
    model = SimpleNamespace(output_layer=layer, _scale_logits=lambda x: x)
    logits = trainer._local_head_stats(
        model,
        hidden,
        output_weight=weight if tied else None,
        need_log_z=False,
        max_top_k=0,
    )[0]
    exact = hidden.detach().double() @ weight.double().T
    got = logits.detach().double().reshape(exact.shape)
    eps32 = torch.finfo(torch.float32).eps
    magnitude = hidden.detach().double().abs() @ weight.double().abs().T
    worst = float(((got - exact).abs() / (4 * hidden_size**0.5 * eps32 * magnitude)).max())
    where = (
        f"{dtype}, {rows} x {vocab}, rows requiring grad: {grad}, sequence parallel: "
        f"{sequence_parallel}"
    )
    assert worst <= 1, f"{where}: {logits.dtype} logits, {worst:.3g} x the FP32 bound"
    assert logits.requires_grad == grad, f"{where}: the logits do not carry the rows' gradient"
