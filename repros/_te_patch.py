"""Item 1's check of ART's patch of Transformer Engine's cross-entropy kernel (0.5.21+).

TE's Triton kernel cannot run here (no TE, no GPU). ART's ``patch_te_cross_entropy``
(``megatron/te_cross_entropy.py``) edits that kernel's *source* and hands it back to Triton;
that much runs on CPU. It is called with a stand-in ``transformer_engine`` whose
``cross_entropy_kernel`` has a ``src`` built as a small kernel skeleton written here (a loop
that loads a block of logits in FP32, forms the gradient and stores it in the logits' dtype,
then the target step after the loop), holding the two pieces of TE's text the patch itself
says it looks for (its module's ``_GRADIENT`` and ``_TARGET``). No TE code is copied: the
pieces are ART's, from the release.

The patch did its work when it handed Triton (``_unsafe_update_src``) a different source. What
that source does is read with ``ast`` (Triton kernels are Python syntax), not by its text:

- the target's term is formed in the block before the store: inside the loop, before the
  ``tl.store`` of the block, an assignment to ``X_block`` whose value compares with ``y`` and
  uses ``label_smoothing`` (``X_block -= tl.where(... == y, 1 - label_smoothing, 0.0)``);
- no separate target step: no ``tl.store`` anywhere whose address uses ``y`` (the BF16 load,
  add and store of step 6).

A patch that returns early, raises, hands back the same source, removes the target step without
forming the term, or forms it and keeps the separate step, is no fix.
"""

from __future__ import annotations

import ast
import sys
import types
from typing import Any

_HEAD = """\
def cross_entropy_kernel(X_ptr, y, m, d, eps, n_cols, n_non_ignore, rank, reduce_loss,
                         label_smoothing, BLOCK_SIZE):
    for i in range(0, n_cols, BLOCK_SIZE):
        X_offsets = i + tl.arange(0, BLOCK_SIZE)
        X_block = tl.load(X_ptr + X_offsets).to(tl.float32)
"""
_STORE = "        tl.store(X_ptr + X_offsets, X_block.to(X_ptr.dtype.element_ty))\n"
_TE = "transformer_engine.common.triton.cross_entropy"


class StandInKernel:
    """TE's ``cross_entropy_kernel`` as the patch uses it: ``src``, the update, the caches."""

    def __init__(self, src: str) -> None:
        self.src = src
        self.updates: list[str] = []
        self.device_caches: dict[Any, Any] = {}

    def _unsafe_update_src(self, src: str) -> None:
        self.updates.append(src)
        self.src = src


def stand_in_source(module: Any) -> str:
    return _HEAD + module._GRADIENT + _STORE + module._TARGET


def run_patch(module: Any) -> tuple[bool, str]:
    """(fixed, how) for ART's ``patch_te_cross_entropy`` run on the stand-in kernel."""
    try:
        original = stand_in_source(module)
    except AttributeError as exc:
        return False, f"does not name the TE text it patches ({exc})"
    kernel = StandInKernel(original)
    names = ["transformer_engine", "transformer_engine.common", "transformer_engine.common.triton"]
    saved = {n: sys.modules.get(n) for n in [*names, _TE]}
    try:
        for name in names:
            sys.modules[name] = types.ModuleType(name)
        te = types.ModuleType(_TE)
        te.cross_entropy_kernel = kernel  # type: ignore[attr-defined]
        sys.modules[_TE] = te
        try:
            module.patch_te_cross_entropy()
        except Exception as exc:  # the patch refuses the kernel: no fix is applied
            return False, f"raises on the kernel it expects ({type(exc).__name__}: {exc})"
    finally:
        for name, value in saved.items():
            if value is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = value
    if not kernel.updates or kernel.src == original:
        return False, "runs but leaves TE's kernel as it was (no source update)"
    return _reads_fixed(kernel.src)


def _reads_fixed(src: str) -> tuple[bool, str]:
    try:
        fn = ast.parse(src).body[0]
    except SyntaxError as exc:
        return False, f"writes a kernel that does not parse ({exc.msg})"
    assert isinstance(fn, ast.FunctionDef)
    loop = next((s for s in fn.body if isinstance(s, ast.For)), None)
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
            "target step (run on a stand-in kernel; the kernel it writes read with ast)"
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
