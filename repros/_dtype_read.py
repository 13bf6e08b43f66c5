"""The dtype a value of ART's code has, read from the program's meaning (``ast``), not its text.

For code a check cannot run. Comments and strings are not code, so they never count; a cast is
read for the dtype it names (``.to(torch.float16)`` is FP16, not "a cast to float"); a name is
followed to its last assignment above the use in the same function; an arithmetic result has
the widest of its operands' dtypes (torch's promotion). A value the reading cannot place has
the input's dtype (``"input"``: BF16 in BF16 training), which is what ART's tensors carry
unless something casts them.

Dtypes are ranked: ``input`` (BF16) < ``float16`` < ``float32`` < ``float64``; ``input`` and
``bfloat16`` are one rank, and ``float16`` no better for this purpose (both round far above
FP32).
"""

from __future__ import annotations

import ast

WIDE = {"float32", "float64"}
_METHOD = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16"}
_TORCH = {
    "float32": "float32",
    "float": "float32",
    "float64": "float64",
    "double": "float64",
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
}
_RANK = {"input": 0, "bfloat16": 0, "float16": 1, "float32": 2, "float64": 3}


def dtype_named(node: ast.expr) -> str | None:
    """``torch.float32`` (or ``float``) -> "float32"; None for anything else (``x.dtype``)."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return _TORCH.get(node.attr) if node.value.id == "torch" else None
    if isinstance(node, ast.Name) and node.id == "float":
        return "float32"
    return None


def widest(*dtypes: str) -> str:
    return max(dtypes, key=lambda d: _RANK[d])


class Reader:
    """Dtypes of expressions inside one function (``ast.FunctionDef``)."""

    def __init__(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.assigned: dict[str, list[tuple[int, ast.expr]]] = {}
        for node in ast.walk(function):
            if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            value = node.value
                            if isinstance(node, ast.AugAssign):
                                value = ast.BinOp(left=ast.Name(name.id), op=node.op, right=value)
                            self.assigned.setdefault(name.id, []).append((node.lineno, value))

    def dtype(self, node: ast.expr, line: int, depth: int = 0) -> str:
        """The dtype of ``node`` used on ``line``."""
        if depth > 20:
            return "input"
        if isinstance(node, ast.Name):
            before = [(n, v) for n, v in self.assigned.get(node.id, []) if n < line]
            if not before:
                return "input"
            n, value = max(before, key=lambda pair: pair[0])
            return self.dtype(value, n, depth + 1)
        if isinstance(node, ast.BinOp):
            return widest(
                self.dtype(node.left, line, depth + 1), self.dtype(node.right, line, depth + 1)
            )
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            if name in _METHOD and not node.args:
                return _METHOD[name]
            if name in ("to", "type"):
                args = [*node.args, *(k.value for k in node.keywords if k.arg == "dtype")]
                named = [d for d in (dtype_named(a) for a in args) if d]
                if named:
                    return named[0]
                return self.dtype(node.func.value, line, depth + 1)
        return "input"

    def add_dtype(self, node: ast.BinOp, line: int) -> str:
        """The dtype an addition is made in: its operands' widest."""
        return widest(self.dtype(node.left, line), self.dtype(node.right, line))


def returned_adds(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Return]:
    """``return <a + b>, <bias>`` statements: a pair whose first value is (or casts) a sum."""
    out = []
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
            elts = node.value.elts
            if len(elts) == 2 and _sum_inside(elts[0]) is not None:
                out.append(node)
    return out


def _sum_inside(node: ast.expr) -> ast.BinOp | None:
    """The addition a returned value is, or the one its casts wrap."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return node
    return None


def add_kept_wide(reader: Reader, ret: ast.Return) -> tuple[bool, str]:
    """Is the returned sum made in FP32 (or wider) and returned without rounding it back?"""
    assert isinstance(ret.value, ast.Tuple)
    value = ret.value.elts[0]
    add = _sum_inside(value)
    assert add is not None
    made = reader.add_dtype(add, ret.lineno)
    kept = reader.dtype(value, ret.lineno) if value is not add else made
    wide = made in WIDE and kept in WIDE
    return wide, f"added in {_shown(made)}, returned in {_shown(kept)}"


def _shown(dtype: str) -> str:
    return "the input's dtype" if dtype == "input" else dtype
