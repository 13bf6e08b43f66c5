"""The dtype a value of ART's code has, read from the program's meaning (``ast``), not its text.

For code a check cannot run. Comments and strings are not code, so they never count; a cast is
read for the dtype it names (``.to(torch.float16)`` is FP16, not "a cast to float"); a name is
followed to its last assignment above the use in the same function; an arithmetic result has
the widest of its operands' dtypes (torch's promotion). A value the reading cannot place has
the input's dtype (``"input"``: BF16 in BF16 training), which is what ART's tensors carry
unless something casts them. A cast to a dtype the reading cannot place (``.to(x.dtype)``
follows ``x``; a dtype from a parameter or a call is unknown) is a cast to the input's dtype,
and a conditional value (``a if flag else b``, an environment flag) has the narrower of its
two dtypes: a fix must hold in every configuration, not only behind a flag.

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


def narrowest(*dtypes: str) -> str:
    return min(dtypes, key=lambda d: _RANK[d])


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
                if not args:
                    return self.dtype(node.func.value, line, depth + 1)
                # A cast to a dtype it names, to another tensor's (``.to(x.dtype)``, ``.to(x)``),
                # or to a dtype held in a name or chosen by a condition: whatever it is.
                cast = self.target(args[0], line, depth + 1)
                return cast or self.dtype(node.func.value, line, depth + 1)
        if isinstance(node, ast.IfExp):  # a flag picks one: the narrower holds on part
            return narrowest(
                self.dtype(node.body, line, depth + 1), self.dtype(node.orelse, line, depth + 1)
            )
        return "input"

    def target(self, node: ast.expr, line: int, depth: int) -> str | None:
        """The dtype a ``.to(node)`` casts to: a dtype named, another tensor's dtype (or the
        tensor itself), a name followed to its assignment, the narrower of a condition's two;
        anything else the input's dtype (a dtype the reading cannot place is not FP32). None
        when it is a device, not a dtype (``.to(x.device)``, ``.to("cuda")``)."""
        named = dtype_named(node)
        if named is not None:
            return named
        if depth > 20:
            return "input"
        if isinstance(node, ast.Constant) or (
            isinstance(node, ast.Attribute) and node.attr == "device"
        ):
            return None
        if isinstance(node, ast.Attribute) and node.attr == "dtype":
            return self.dtype(node.value, line, depth + 1)
        if isinstance(node, ast.IfExp):
            return narrowest(
                self.target(node.body, line, depth + 1) or "input",
                self.target(node.orelse, line, depth + 1) or "input",
            )
        if isinstance(node, ast.Name):
            before = [(n, v) for n, v in self.assigned.get(node.id, []) if n < line]
            if before:
                n, value = max(before, key=lambda pair: pair[0])
                return self.target(value, n, depth + 1)
            return "input"  # a parameter: a tensor of the input's dtype, or a dtype unknown
        return "input"

    def add_dtype(self, node: ast.BinOp, line: int) -> str:
        """The dtype an addition is made in: its operands' widest."""
        return widest(self.dtype(node.left, line), self.dtype(node.right, line))


def returned_adds(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Return]:
    """``return <a + b>, <bias>`` statements: a pair whose first value is (or casts) a sum, or
    a name last assigned one above the ``return`` (``total = a + b; return total, bias``)."""
    reader = Reader(function)
    out = []
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
            elts = node.value.elts
            if len(elts) == 2 and _sum_of(reader, elts[0], node.lineno) is not None:
                out.append(node)
    return out


def _sum_inside(node: ast.expr) -> ast.BinOp | None:
    """The addition a returned value is, or the one its casts wrap."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return node
    return None


def _sum_of(reader: Reader, node: ast.expr, line: int) -> tuple[ast.BinOp, int] | None:
    """The addition a value is (through its casts and the names it was assigned from), and the
    line it is made on."""
    for _ in range(20):
        add = _sum_inside(node)
        if add is not None:
            return add, line
        # A name is followed through casts only (``total.float()``), not through other calls
        # (``zero.expand(...).clone()`` is not the value a sum was assigned).
        while (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in (*_METHOD, "to", "type")
        ):
            node = node.func.value
        if not isinstance(node, ast.Name):
            return None
        before = [(n, v) for n, v in reader.assigned.get(node.id, []) if n < line]
        if not before:
            return None
        line, node = max(before, key=lambda pair: pair[0])
    return None


def add_kept_wide(reader: Reader, ret: ast.Return) -> tuple[bool, str]:
    """Is the returned sum made in FP32 (or wider) and returned without rounding it back?"""
    assert isinstance(ret.value, ast.Tuple)
    value = ret.value.elts[0]
    found = _sum_of(reader, value, ret.lineno)
    assert found is not None
    add, line = found
    made = reader.add_dtype(add, line)
    kept = reader.dtype(value, ret.lineno) if value is not add else made
    wide = made in WIDE and kept in WIDE
    return wide, f"added in {_shown(made)}, returned in {_shown(kept)}"


def _shown(dtype: str) -> str:
    return "the input's dtype" if dtype == "input" else dtype
