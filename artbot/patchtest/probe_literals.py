"""What the probe scan (:mod:`.probes`) reads as written out in a patch's code, never run: a
string folded from its literal parts, a module's string constants, docstrings, the places where
the code decides (#53)."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Mapping

ART_PACKAGE = "art"


def docstrings(tree: ast.Module) -> set[int]:
    """Strings standing alone as statements (docstrings): read by nothing but ``__doc__``,
    which is a probe of its own."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant | ast.JoinedStr)
    }


def false_literal(node: ast.AST) -> bool:
    """``False``, ``None`` or ``0`` written literally (``record=False``: nothing recorded)."""
    return isinstance(node, ast.Constant) and not node.value and not isinstance(node.value, str)


def literal_getattr(node: ast.AST, consts: Mapping[str, str]) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and folded(node.args[1], consts) is not None
    )


def constants(tree: ast.Module, aliases: Mapping[str, str]) -> dict[str, str]:
    """``NAME = "float32"`` at module level, the only binding of NAME in the file: read as
    the literal wherever NAME is (``getattr(torch, NAME)`` is ``torch.float32``)."""
    stores = Counter(
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    )
    stores.update(a.arg for a in ast.walk(tree) if isinstance(a, ast.arg))
    stores.update(
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    )
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        name = target.id if isinstance(target, ast.Name) else ""
        if stores[name] == 1 and name not in aliases and (text := folded(value, {})) is not None:
            out[name] = text
    return out


def gate_positions(tree: ast.Module) -> set[int]:
    """The nodes where the code decides: inside a comparison, an ``if``'s, ``while``'s or
    ``assert``'s test, a conditional expression's test."""
    tests: list[ast.expr] = [n for n in ast.walk(tree) if isinstance(n, ast.Compare)]
    tests += [
        n.test for n in ast.walk(tree) if isinstance(n, ast.If | ast.IfExp | ast.While | ast.Assert)
    ]
    return {id(n) for t in tests for n in ast.walk(t)}


def folded(node: ast.AST, consts: Mapping[str, str]) -> str | None:
    """A string the code spells out: a literal, a concatenation of literals (``"o" + "s"``;
    ``"o" "s"`` is one literal), an f-string's literal parts, a name of :func:`_constants`;
    None when it is not one."""
    stack: list[ast.AST] = [node]
    parts: list[str] = []
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            parts.append(n.value)
        elif isinstance(n, ast.Name) and n.id in ("__package__", "__name__"):
            parts.append(ART_PACKAGE)  # a module of ART's own name (the file is under art/)
        elif isinstance(n, ast.Name) and n.id in consts:
            parts.append(consts[n.id])
        elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
            stack += [n.right, n.left]
        elif isinstance(n, ast.JoinedStr) and n is node:
            stack += reversed(n.values)
        elif isinstance(n, ast.FormattedValue):
            continue
        else:
            return None
    return "".join(parts)
