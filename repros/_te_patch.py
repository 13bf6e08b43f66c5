"""Item 1's check of ART's patch of Transformer Engine's cross-entropy kernel (0.5.21+).

TE's Triton kernel cannot run here (no TE, no GPU). ART's ``patch_te_cross_entropy``
(``megatron/te_cross_entropy.py``) edits that kernel's *source* and hands it back to Triton;
that much runs on CPU. It is called with a stand-in ``transformer_engine`` whose
``cross_entropy_kernel`` has as ``src`` TE's real kernel: ``cross_entropy_kernel`` of
``transformer_engine/common/triton/cross_entropy.py`` from the ``transformer_engine_cu12``
2.14.0 wheel, shipped unchanged as test data (``repros/data/transformer_engine-2.14.0/``,
version and sha256 in its ``SOURCE.json``, checked at each run), cut from its ``def`` to the end
of the function as Triton's ``JITFunction.src`` holds it. A patch whose search strings no
longer match TE's kernel refuses it or leaves it as it was, and is no fix.

The patch did its work when it handed Triton (``_unsafe_update_src``) a different source. What
that source does is read with ``ast`` (Triton kernels are Python syntax), not by its text:

- the target's term is formed in the block before the store: inside the loop that stores the
  gradient block, before that ``tl.store``, an assignment to ``X_block`` whose value compares
  with ``y`` and uses ``label_smoothing`` (``X_block -= tl.where(... == y, 1 -
  label_smoothing, 0.0)``);
- no separate target step: no ``tl.store`` anywhere whose address uses ``y`` (the BF16 load,
  add and store of step 6).

A patch that returns early, raises, hands back the same source, removes the target step without
forming the term, or forms it and keeps the separate step, is no fix.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import sys
import traceback
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_TE = "transformer_engine.common.triton.cross_entropy"
TE_DATA = Path(__file__).resolve().parent / "data" / "transformer_engine-2.14.0"


def te_kernel() -> tuple[str, dict[str, str]]:
    """TE 2.14.0's ``cross_entropy_kernel`` source as Triton holds it (from ``def`` to the end
    of the function), and the pinned file's record; the file's sha256 is checked."""
    record = json.loads((TE_DATA / "SOURCE.json").read_text(encoding="utf-8"))
    raw = (TE_DATA / record["file"]).read_bytes()
    if hashlib.sha256(raw).hexdigest() != record["file_sha256"]:
        raise RuntimeError(f"{TE_DATA / record['file']} does not match its recorded sha256")
    text = raw.decode("utf-8")
    node = next(
        n
        for n in ast.parse(text).body
        if isinstance(n, ast.FunctionDef) and n.name == "cross_entropy_kernel"
    )
    lines = text.splitlines(keepends=True)
    return "".join(lines[node.lineno - 1 : node.end_lineno]), record


class StandInKernel:
    """TE's ``cross_entropy_kernel`` as the patch uses it: ``src``, the update, the caches."""

    def __init__(self, src: str) -> None:
        self.src = src
        self.updates: list[str] = []
        self.device_caches: dict[Any, Any] = {}

    def _unsafe_update_src(self, src: str) -> None:
        self.updates.append(src)
        self.src = src


@contextlib.contextmanager
def _stand_in_te(kernel: StandInKernel) -> Iterator[None]:
    """``transformer_engine``'s cross-entropy module in ``sys.modules``, holding ``kernel``."""
    names = ["transformer_engine", "transformer_engine.common", "transformer_engine.common.triton"]
    saved = {n: sys.modules.get(n) for n in [*names, _TE]}
    try:
        for name in names:
            sys.modules[name] = types.ModuleType(name)
        te = types.ModuleType(_TE)
        te.cross_entropy_kernel = kernel  # type: ignore[attr-defined]
        sys.modules[_TE] = te
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = value


def _outcome(kernel: StandInKernel, original: str) -> tuple[bool, str]:
    return kernel_outcome(kernel.src, len(kernel.updates))


def kernel_outcome(src: str | None, updates: int) -> tuple[bool, str]:
    """(fixed, how) for the kernel source Triton holds after ART ran, and how many times ART
    handed it a new one. Pure (no ART): artbot's judge of item 1 calls it on the raw text."""
    original, _record = te_kernel()
    if not updates or not src or src == original:
        return False, "runs but leaves TE 2.14.0's kernel as it was (no source update)"
    return _reads_fixed(src)


def run_patch(module: Any) -> tuple[bool, str]:
    """(fixed, how) for ART's ``patch_te_cross_entropy`` run on the stand-in kernel."""
    original, _record = te_kernel()
    kernel = StandInKernel(original)
    with _stand_in_te(kernel):
        try:
            module.patch_te_cross_entropy()
        except Exception as exc:  # the patch refuses the kernel: no fix is applied
            return False, f"raises on TE 2.14.0's kernel ({type(exc).__name__}: {exc})"
    return _outcome(kernel, original)


@dataclass
class Imported:
    """What importing a module of ART did to TE 2.14.0's kernel (:func:`run_import`)."""

    patched: bool  # a kernel that forms the target term in FP32 before the one store
    how: str
    line: int | None  # the module's line that was running when the kernel was touched
    patch: tuple[str, int, int] | None  # (file, first line, last line) of the function that did
    module: Any = None  # the module imported (None: its import raised in a patch it runs)
    kernel: StandInKernel | None = None  # the stand-in kernel, still in place while open

    def settle(self) -> None:
        """``patched`` and ``how`` for the kernel as it is now (after the import, or after
        what ran later in the module: a patch made in ``prepare_provider_bundle`` counts)."""
        if self.module is not None and self.kernel is not None:
            self.patched, self.how = kernel_outcome(self.kernel.src, len(self.kernel.updates))


def run_import(whole: Any, relpath: str) -> Imported:
    """:func:`imported` closed at once: what the import alone did to the kernel."""
    with imported(whole, relpath) as done:
        return done


@contextlib.contextmanager
def imported(whole: Any, relpath: str) -> Iterator[Imported]:
    """Import ``art/<relpath>`` whole (``_art_whole``) with the stand-in kernel in place, as
    ART's training process imports it: whatever the import runs (a module-level call, through
    any alias, helper or loop) reaches the kernel or does not. The kernel stays in place while
    the context is open, so what the caller runs next in ART (``prepare_provider_bundle``)
    can reach it too. Which line of the module was running, and which function handed Triton
    a new source, are taken from the call stack at that moment, not from the text."""
    original, _record = te_kernel()
    kernel = StandInKernel(original)
    target = str(whole.art.package_dir / relpath)
    done = Imported(False, "", None, None, None, kernel)

    def update(src: str) -> None:
        frames = []
        frame = sys._getframe(1)
        while frame is not None:
            frames.append(frame)
            frame = frame.f_back
        lines = [f.f_lineno for f in frames if f.f_code.co_filename == target]
        done.line = lines[-1] if lines else None
        code = frames[0].f_code
        done.patch = (code.co_filename, code.co_firstlineno, frames[0].f_lineno)
        StandInKernel._unsafe_update_src(kernel, src)

    kernel._unsafe_update_src = update  # type: ignore[method-assign]
    with _stand_in_te(kernel):
        try:
            done.module = whole.load(relpath)
        except Exception as exc:
            where = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == target]
            if not where or where[-1] is traceback.extract_tb(exc.__traceback__)[-1]:
                raise  # the module itself fails, not a patch it runs: the check cannot run
            done.how = f"raises on TE 2.14.0's kernel ({type(exc).__name__}: {exc})"
            done.line, done.patch = where[-1].lineno, None
            yield done
            return
        done.settle()
        yield done


class StandInProvider:
    """Megatron-Bridge's ``GPTModelProvider`` for one model (``HF_CONFIGS``): the fields ART
    sets are kept, with the line of ART that set each; a Megatron field never set reads as None
    (the dataclass's defaults are None or False for what ART's preparation reads), and a name
    of ART's own (``art_...``, ``_art_...``) not set does not exist, as on the dataclass."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.__dict__.update(fields)
        self.__dict__["set_at"] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith(("__", "art_", "_art")):
            raise AttributeError(name)
        return None

    def __setattr__(self, name: str, value: Any) -> None:
        caller = sys._getframe(1)
        self.__dict__["set_at"][name] = (caller.f_code.co_filename, caller.f_lineno)
        self.__dict__[name] = value


# The models of ART's registry the preparation runs for on a CPU (their model-support handlers
# need nothing but Megatron names): Megatron-Bridge's provider fields from each HF config.
HF_CONFIGS: dict[str, dict[str, Any]] = {
    "Qwen/Qwen3-4B": {"num_layers": 36, "hidden_size": 2560, "ffn_hidden_size": 9728},
    "Qwen/Qwen3-30B-A3B": {
        "num_layers": 48,
        "hidden_size": 2048,
        "ffn_hidden_size": 6144,
        "num_moe_experts": 128,
        "moe_ffn_hidden_size": 768,
        "moe_router_topk": 8,
    },
    "meta-llama/Llama-3.1-8B": {"num_layers": 32, "hidden_size": 4096, "ffn_hidden_size": 14336},
}
_HEADS = {"num_attention_heads": 32, "num_query_groups": 8, "kv_channels": 128}


def prepare(module: Any, model: str, dtype: str) -> dict[str, Any]:
    """ART's ``prepare_provider_bundle(model, torch_dtype=...)`` run, Megatron-Bridge's
    ``AutoBridge`` (and transformers' ``AutoConfig``) stood in for at the boundary: the bridge
    hands back a :class:`StandInProvider`. Returns the cross-entropy fusion fields ART left on
    it and where ART set the implementation (file, line)."""
    import torch

    fields = {**_HEADS, "vocab_size": 151936, **HF_CONFIGS[model]}

    class Bridge:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.provider = StandInProvider(fields)

        def to_megatron_provider(self, *args: Any, **kwargs: Any) -> StandInProvider:
            return self.provider

        from_hf_pretrained = from_hf_config = classmethod(lambda cls, *a, **k: cls())

    class Config:
        from_pretrained = staticmethod(lambda *a, **k: None)

    module.AutoBridge, module.AutoConfig = Bridge, Config
    bundle = module.prepare_provider_bundle(model, torch_dtype=getattr(torch, dtype))
    provider = bundle.provider
    where = provider.set_at.get("cross_entropy_fusion_impl")
    return {
        "fusion_impl": _plain(provider.cross_entropy_fusion_impl),
        "loss_fusion": _plain(provider.cross_entropy_loss_fusion),
        "set_at": [where[0], where[1]] if where else None,
    }


def _plain(value: Any) -> Any:
    return value if value is None or isinstance(value, str | bool | int | float) else repr(value)


def _reads_fixed(src: str) -> tuple[bool, str]:
    try:
        fn = ast.parse(src).body[0]
    except SyntaxError as exc:
        return False, f"writes a kernel that does not parse ({exc.msg})"
    assert isinstance(fn, ast.FunctionDef)
    # The loop that stores the gradient block (TE's step 4), wherever it sits.
    loop = next(
        (n for n in ast.walk(fn) if isinstance(n, ast.For) and any(map(_is_block_store, n.body))),
        None,
    )
    formed = False
    if loop is not None:
        for stmt in loop.body:
            if _is_block_store(stmt):
                break
            if _sets_block_with_target(stmt):
                formed = True
    separate = any(_store_at_target(n) for n in ast.walk(fn))
    if formed and not separate:
        return True, (
            "forms the target's p - 1 in FP32 before the one store and removes the BF16 "
            "target step (run on TE 2.14.0's kernel source; the kernel it writes read with ast)"
        )
    missing = []
    if not formed:
        missing.append("does not form the target's term in the FP32 block before the store")
    if separate:
        missing.append("keeps a separate store at the target")
    return False, "patches the kernel but " + " and ".join(missing)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _is_tl_call(node: ast.AST, name: str) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == name
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "tl"
    )


def _is_block_store(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and _is_tl_call(stmt.value, "store")
        and "X_block" in _names(stmt.value)
    )


def _sets_block_with_target(stmt: ast.stmt) -> bool:
    """``X_block = ...`` / ``X_block -= ...`` whose value compares with ``y`` and uses
    ``label_smoothing``, at any depth of the statement (an ``if`` included)."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "X_block" for t in targets):
                compares_y = any(
                    isinstance(c, ast.Compare) and "y" in _names(c) for c in ast.walk(node.value)
                )
                if compares_y and "label_smoothing" in _names(node.value):
                    return True
    return False


def _store_at_target(node: ast.AST) -> bool:
    return _is_tl_call(node, "store") and bool(node.args) and "y" in _names(node.args[0])  # type: ignore[attr-defined]
