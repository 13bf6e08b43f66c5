"""Audit item 4: TrainerRank's LM head (``TrainerRank._local_logits_from_hidden_rows``) gives
Megatron's output layer the BF16 hidden rows and weight, so the GEMM returns the logits rounded
to BF16 before the FP32 log-softmax. An FP32-output GEMM for the head chunk gives logits that
carry FP32 precision, with the rows requiring grad (training) or not, for a BF16 or an FP16
model, with the weight passed or the layer's own, for chunks over a small and over Qwen3's
151,936-id vocabulary: this test asserts that. Domain: dtype bfloat16/float16; weight passed or
the layer's own; vocab 512 and 151,936. Oracle: float64 (the same operands' product). Tolerance:
the FP32 bound of an FP32-accumulated dot product, 4 sqrt(hidden) eps(fp32) (|H| @ |W|), on every
logit, as artbot's check holds it.

The audit does not decide this fix: it asks for a GPU A/B of an FP32-output head (the trainer /
vLLM logprob gap, and the memory its admission must price), not for FP32 logits. So the test is
a non-strict xfail: present in openpipe-art 0.5.20, 0.5.21 and 0.5.23 (the logits' relative
error is 1.7e-3, BF16's), it reports an unexpected pass (XPASS) once the head gives FP32
logits, without failing ART's suite; it becomes a plain test if that is the behaviour chosen.
CPU only: the method is read from ART's source and run around a stand-in for Megatron's output
layer that returns the product of what it is given rounded once to the operands' dtype, as a GPU
GEMM with FP32 accumulation stores it, and refuses operands of two dtypes, as ``F.linear`` does.
"""

import ast
import importlib.util
import re
import textwrap
import types
from pathlib import Path
from types import SimpleNamespace

import pytest

try:  # torch and ART's optional dependencies may be absent where ART's tests run: skip
    import torch
except ModuleNotFoundError as missing:  # one of ART's own modules missing is a failure
    if (missing.name or "art").partition(".")[0] == "art":
        raise
    pytest.skip(f"{missing.name} is not installed", allow_module_level=True)


NAMESPACE: dict[str, object] = {"torch": torch}


def art_impl(*names: str) -> tuple[object, ...]:
    """``trainer_rank/_impl.py``'s definitions ``names`` (``Class.method`` for a method, compiled
    as a function), run from the file's text in one namespace with ``torch``. Each is cut at its
    indentation and parsed alone: the test needs neither the class (its defaults name much of
    the module) nor the Python 3.12 the rest of the file is written for. All are run in one
    namespace, so each sees the module-level helpers cut before it."""
    spec = importlib.util.find_spec("art.trainer_rank._impl")
    assert spec is not None and spec.origin is not None
    lines = Path(spec.origin).read_text(encoding="utf-8").splitlines()
    namespace = NAMESPACE  # one for every definition cut, as the module is one namespace
    for name in names:
        cls, _, func = name.rpartition(".")
        indent = "    " if cls else ""
        start = 0
        if cls:
            start = next(i for i, line in enumerate(lines) if re.match(rf"class {cls}\b", line))
        head = re.compile(rf"{indent}def {func}\(")
        first = next(i for i in range(start, len(lines)) if head.match(lines[i]))
        block_end = re.compile(rf" {{0,{len(indent)}}}(?:async def |def |class |@|[A-Za-z_])")
        last = next(
            (i for i in range(first + 1, len(lines)) if block_end.match(lines[i])), len(lines)
        )
        node = ast.parse(textwrap.dedent("\n".join(lines[first:last]))).body[0]
        ast.increment_lineno(node, first)
        exec(compile(ast.Module([node], []), spec.origin, "exec"), namespace)
    return tuple(namespace[name.rpartition(".")[2]] for name in names)


class GemmOutputLayer:
    """Megatron's output layer on one rank: the rows times the weight (the one passed, else its
    own), accumulated in FP32 and rounded once to the operands' dtype."""

    def __init__(self, weight: torch.Tensor) -> None:
        self.weight = weight
        self.sequence_parallel = False

    def __call__(
        self, x: torch.Tensor, weight: torch.Tensor | None = None, **_: object
    ) -> tuple[torch.Tensor, None]:
        weight = self.weight if weight is None else weight
        if x.dtype != weight.dtype:
            raise TypeError(f"the GEMM was given {x.dtype} rows and a {weight.dtype} weight")
        return (x.float() @ weight.float().T).to(x.dtype), None  # FP32 accumulation


ROWS, HIDDEN, VOCAB = 64, 256, 512


class TrainerRankSelf:
    """``self`` for a TrainerRank method: its other methods, each cut from the file on first
    use and bound to it (a fix written as a helper method runs)."""

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            (function,) = art_impl(f"TrainerRank.{name}")
        except StopIteration:
            raise AttributeError(name) from None
        return types.MethodType(function, self)


SHAPES = [(ROWS, HIDDEN, VOCAB), (64, 8, 151_936)]  # (rows, hidden, vocabulary): Qwen3's too


@pytest.mark.xfail(
    strict=False, raises=AssertionError, reason="audit item 4 is open; the audit decides no fix"
)
@pytest.mark.parametrize("tied", [True, False], ids=["weight passed", "layer's own weight"])
def test_head_logits_carry_fp32_precision(tied: bool) -> None:
    # Over the domain in one test: a head that is FP32 for one dtype, grad mode or chunk size
    # only is not.
    for dtype in (torch.bfloat16, torch.float16):
        for grad in (False, True):
            for rows, hidden_size, vocab in SHAPES:
                check(tied, grad, dtype, rows, hidden_size, vocab)


def check(
    tied: bool, grad: bool, dtype: torch.dtype, rows: int, hidden_size: int, vocab: int
) -> None:
    # Entered at the head's call site (its statistics without the log-normaliser or top-k,
    # whose first output is the local logits), so a fix made in the caller counts too.
    (method,) = art_impl("TrainerRank._local_head_stats")
    art_impl("_batch_seq_logits")  # a module-level helper the head calls
    gen = torch.Generator().manual_seed(0)
    hidden = (3.0 * torch.randn(rows, hidden_size, generator=gen)).to(dtype)  # logits to ~50
    weight = (torch.randn(vocab, hidden_size, generator=gen) / hidden_size**0.5).to(dtype)
    hidden.requires_grad_(grad)
    model = SimpleNamespace(output_layer=GemmOutputLayer(weight), _scale_logits=lambda x: x)
    logits = method(
        TrainerRankSelf(),
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
    where = f"{dtype}, {rows} x {vocab}, rows requiring grad: {grad}"
    assert worst <= 1, f"{where}: {logits.dtype} logits, {worst:.3g} x the FP32 bound"
    assert logits.requires_grad == grad, f"{where}: the logits do not carry the rows' gradient"
