"""Item 6's reading of TrainerRank's optimizer code in one ART tree, with ``ast``.

What is read (every file of ``art/trainer_rank/``; each statement parsed on its own, see
``_source``):

- ``class AdamParams``: its fields and their defaults.
- Every ``AdamW(...)`` call: does it pass ``eps``, and how — a keyword (``eps=params.eps``), a
  ``**`` mapping that copies ``"eps"`` from another optimizer's defaults, or not at all (then
  PyTorch's default applies).
- The cross-rank guard (the function that raises "... AdamParams differ across ranks"): does it
  compare an ``eps``?

``configurable`` answers the claim: AdamParams has an ``eps`` field and every AdamW call passes
it (``eps=params.eps``; calls that copy another optimizer's defaults inherit it). Whether the
cross-rank guard compares it (the rest of the audit's fix) is reported beside it.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _source

GUARD_MESSAGE = "differ across ranks"


@dataclass(frozen=True)
class AdamCall:
    path: str  # art/trainer_rank/<file>
    line: int
    eps: str  # "keyword <expr>", "copied by ** from <expr>", or "" when not passed
    end: int = 0  # last line of the statement that holds the call
    text: str = ""  # the call's first line, stripped


@dataclass
class AdamReading:
    fields: dict[str, Any] = field(default_factory=dict)  # name: default (None when required)
    params_at: str = ""
    calls: list[AdamCall] = field(default_factory=list)
    guard_at: str = ""
    guard_covers_eps: bool | None = None  # None: no guard found
    restored_at: list[str] = field(default_factory=list)  # `...["eps"] = ...` assignments
    read: list[str] = field(default_factory=list)
    params_lines: dict[str, Any] = field(default_factory=dict)  # AdamParams as a source line

    def at(self, *, params: bool = True) -> list[dict[str, Any]]:
        """Where the claim's code is, as source lines for the record: AdamParams (unless
        ``params`` is False) and every AdamW call that builds an optimizer from AdamParams
        (calls that copy another optimizer's defaults are in the detail, not here)."""
        calls = [
            {"path": c.path, "line": c.line, "end": max(c.end, c.line), "look_for": c.text}
            for c in self.calls
            if not c.eps.startswith("copied")
        ]
        return [self.params_lines, *calls] if params and self.params_lines else calls

    @property
    def has_eps_field(self) -> bool:
        return "eps" in self.fields

    @property
    def configurable(self) -> bool:
        """The claim's fix: an ``eps`` field that every AdamW call passes (or copies). The
        guard is reported beside it (the audit's fix names it too), not required here: the
        claim is that eps cannot be set."""
        passed = all(c.eps for c in self.calls) and bool(self.calls)
        from_params = any(c.eps.startswith("keyword") and ".eps" in c.eps for c in self.calls)
        return self.has_eps_field and passed and from_params

    @property
    def default_eps(self) -> float | None:
        """The eps TrainerRank uses unless a caller sets one: AdamParams' default when the
        field is passed on, else torch's AdamW default; None for a field with no default."""
        if not self.configurable:
            return torch_default_eps()
        value = self.fields.get("eps")
        return float(value) if isinstance(value, int | float) else None

    @property
    def eps_source(self) -> str:
        if self.configurable:
            return f"AdamParams.eps default, {self.params_at}"
        return "torch.optim.AdamW's default, read from torch"

    @property
    def detail(self) -> str:
        names = ", ".join(self.fields) or "none"
        calls = "; ".join(
            f"{c.path}:{c.line} {c.eps or 'no eps (torch default)'}" for c in self.calls
        )
        guard = (
            "no cross-rank guard found"
            if self.guard_covers_eps is None
            else f"cross-rank guard {self.guard_at} "
            + ("compares eps" if self.guard_covers_eps else "does not compare eps")
        )
        restored = (
            f"; an optimizer's eps is set from saved state at {', '.join(self.restored_at)}"
            if self.restored_at
            else ""
        )
        return (
            f"AdamParams fields ({self.params_at}): {names}; AdamW calls: {calls}; {guard}"
            f"{restored}"
        )


def torch_default_eps() -> float:
    import torch

    return float(inspect.signature(torch.optim.AdamW.__init__).parameters["eps"].default)


def _eps_of(call: ast.Call) -> str:
    for kw in call.keywords:
        if kw.arg == "eps":
            return f"keyword eps={ast.unparse(kw.value)}"
    for kw in call.keywords:
        if kw.arg is None and any(
            isinstance(n, ast.Constant) and n.value == "eps" for n in ast.walk(kw.value)
        ):
            copied = kw.value
            source = copied.value if isinstance(copied, ast.DictComp) else copied
            return f"copied by ** from {ast.unparse(source)}"
    return ""


def _is_adamw(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name == "AdamW"


def read(art: Any) -> AdamReading:
    folder = Path(art.package_dir) / "trainer_rank"
    files = sorted(folder.glob("*.py"))
    if not files:
        raise RuntimeError(f"{art.name}/trainer_rank/ has no Python files")
    out = AdamReading()
    for file in files:
        rel = f"trainer_rank/{file.name}"
        where = f"{art.name}/{rel}"
        text = art.source(rel)
        if "class AdamParams" in text and not out.params_at:
            block = _source.class_named(text, "AdamParams")
            out.params_at = f"{where}:{block.line}"
            out.params_lines = {
                "path": where,
                "line": block.line,
                "end": block.end,
                "look_for": block.text.splitlines()[0].strip(),
            }
            assert isinstance(block.node, ast.ClassDef)
            for stmt in block.node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    default = None if stmt.value is None else ast.literal_eval(stmt.value)
                    out.fields[stmt.target.id] = default
            out.read.append(f"{where}:AdamParams (source read, ast)")
        for line in _source.lines_with(text, "AdamW("):
            stmt = _source.statement_at(text, line)
            for node in ast.walk(stmt.node):
                if _is_adamw(node):
                    assert isinstance(node, ast.Call)
                    at = line + node.lineno - 1
                    first = text.splitlines()[at - 1].strip()
                    out.calls.append(AdamCall(where, at, _eps_of(node), stmt.end, first))
        for line in _source.lines_with(text, '["eps"] ='):
            node = _source.statement_at(text, line).node
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Subscript) and ast.unparse(t.slice) == "'eps'"
                for t in node.targets
            ):
                out.restored_at.append(f"{where}:{line}")
        for line in _source.lines_with(text, GUARD_MESSAGE):
            guard = _source.enclosing_def(text, line)
            out.guard_at = f"{where}:{guard.line}"
            out.guard_covers_eps = any(
                isinstance(n, ast.Attribute) and n.attr == "eps" for n in ast.walk(guard.node)
            )
    if not out.params_at:
        raise RuntimeError(f"{art.name}/trainer_rank/ defines no AdamParams")
    if not out.calls:
        raise RuntimeError(f"{art.name}/trainer_rank/ constructs no AdamW")
    out.read.append(f"{art.name}/trainer_rank/*.py: every AdamW(...) call (source read, ast)")
    return out


def target_modules(art: Any, model: str) -> tuple[str, ...]:
    """ART's default LoRA target modules for ``model`` (its registry's function, run)."""
    registry = art.load("megatron/model_support/registry.py")
    return tuple(registry.default_target_modules_for_model(model))
