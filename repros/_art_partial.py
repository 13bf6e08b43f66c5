"""The part of one ART module that a check needs, compiled from the release's source and run.

Some ART files cannot be imported on a CPU machine: they import Megatron, Transformer Engine or
GPU kernels at module level, or use Python 3.12 syntax (``trainer_rank/_impl.py``). The code a
check needs from them (``LoRA``, an optimizer builder, the LM head's logits) mostly does not
use those imports. :class:`PartialModule` takes the top-level definitions a check asks for from
the release's text (``_source``, one statement at a time), and with them every top-level
definition of the same file that they name, and runs them in file order in one namespace,
compiled under ART's file name and line numbers (a traceback points at the release's line).

Each other name they use comes from the file's own imports: importable ones as installed (ART's
own through ``art``'s importer), the rest from ``stand_ins`` when the check gives one (said in
its result), else an :class:`Absent` placeholder that fails, naming the import, if the code
ever uses it. Nothing of ART's code is kept in this project: it is read from the release at
each run.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
import sys
import textwrap
import types
from collections.abc import Iterable
from typing import Any

import _art_extract
import _source

_TOP = re.compile(r"^(?:async\s+def|def|class)\s+(\w+)|^(\w+)\s*(?::[^=]+)?=(?!=)")


class AbsentError(RuntimeError):
    """ART's code used a name whose import cannot be satisfied on this machine."""


class Absent:
    """A name ART imports from a package that cannot be imported here (Megatron, TE, CUDA
    kernels): harmless in an annotation, an error naming the import on any use."""

    def __init__(self, qualname: str, why: str) -> None:
        object.__setattr__(self, "_qualname", qualname)
        object.__setattr__(self, "_why", why)

    def __repr__(self) -> str:
        return f"<absent {self._qualname}: {self._why}>"

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise AbsentError(f"ART's code used {self._qualname}, which is not importable: {self._why}")

    __call__ = _fail
    __iter__ = _fail
    __mro_entries__ = _fail

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._fail()

    def __getitem__(self, item: Any) -> Any:  # ``Absent[...]`` in an annotation
        return self

    def __or__(self, other: Any) -> Any:  # ``X | None`` in an annotation
        return self

    __ror__ = __or__


def free_names(nodes: Iterable[ast.AST]) -> set[str]:
    """Every name loaded anywhere in ``nodes`` that is not a builtin."""
    return {
        n.id
        for node in nodes
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and not hasattr(builtins, n.id)
    }


class PartialModule:
    """Top-level definitions of ``art/<relpath>``, compiled on demand with what they name."""

    def __init__(self, art: Any, relpath: str, stand_ins: dict[str, Any] | None = None) -> None:
        self.art = art
        self.relpath = relpath
        self.path = f"{art.name}/{relpath}"
        self.text = art.source(relpath)
        if not self.text:
            raise LookupError(f"{self.path} is not in this tree")
        self.lines = self.text.splitlines()
        self.stand_ins = dict(stand_ins or {})
        self.stand_ins_used: set[str] = set()
        self.absent: dict[str, str] = {}
        self.index: dict[str, int] = {}
        for number, line in enumerate(self.lines, 1):
            match = _TOP.match(line)
            if match:
                self.index.setdefault(match.group(1) or match.group(2), number)
        self.imports = _art_extract._imports(art, relpath, self.text)
        # A module of its own, in sys.modules while ``art``'s context is open (dataclasses
        # look their class's module up there); the context removes it with ART's modules.
        dotted = ".".join([art.name, "_artbot_partial", *relpath.removesuffix(".py").split("/")])
        module = types.ModuleType(dotted)
        sys.modules[dotted] = module
        self.namespace: dict[str, Any] = module.__dict__
        self._parsed: dict[str, tuple[ast.stmt, int]] = {}

    def has(self, name: str) -> bool:
        return name in self.index

    def line_of(self, name: str) -> int:
        return self.index[name]

    def statement(self, name: str) -> tuple[ast.stmt, int]:
        """The top-level statement that defines ``name`` (decorators included), parsed alone
        with the file's line numbers, and its first line."""
        if name in self._parsed:
            return self._parsed[name]
        line = self.index[name]
        head = self.lines[line - 1]
        if head.startswith(("def ", "async ", "class ")):
            block = _source.block_at(self.text, line)
            first = line
            while first > 1 and self.lines[first - 2].startswith("@"):
                first -= 1
            chunk = "\n".join(self.lines[first - 1 : block.end])
            node = ast.parse(textwrap.dedent(chunk)).body[0]
        else:
            first = line
            node = _source.statement_at(self.text, line).node
        ast.increment_lineno(node, first - 1)
        self._parsed[name] = (node, first)
        return node, first

    def get(self, *names: str) -> Any:
        """Compile ``names`` (and what they need) and return their values (one, or a tuple)."""
        wanted: dict[str, tuple[ast.stmt, int]] = {}
        todo = list(names)
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name in seen or name in self.namespace:
                continue
            seen.add(name)
            if name in self.stand_ins:
                self.namespace[name] = self.stand_ins[name]
                self.stand_ins_used.add(name)
            elif name in self.index:
                node, first = self.statement(name)
                wanted[name] = (node, first)
                todo.extend(free_names([node]))
            elif name in self.imports:
                self.namespace[name] = self._import(name)
        for node, _first in sorted(wanted.values(), key=lambda pair: pair[1]):
            module = ast.Module(body=[node], type_ignores=[])
            ast.fix_missing_locations(module)
            exec(compile(module, self.path, "exec"), self.namespace)  # noqa: S102 - ART's own
        values = tuple(self.namespace.get(n) for n in names)
        return values[0] if len(values) == 1 else values

    def method(self, class_name: str, name: str) -> tuple[Any, int]:
        """``class_name.name`` compiled alone as a module-level function (call it with a
        stand-in ``self``), with what it names; and its first line. The class itself is not
        parsed (ART's biggest classes hold syntax this Python cannot parse)."""
        start = self.index.get(class_name)
        if start is None:
            raise LookupError(f"{self.path} defines no class {class_name}")
        line = next(
            (
                n
                for n in range(start + 1, len(self.lines) + 1)
                if re.match(rf"    (async )?def {name}\(", self.lines[n - 1])
                or (self.lines[n - 1][:1].strip() and n > start + 1)
            ),
            None,
        )
        if line is None or not self.lines[line - 1].startswith("    "):
            raise LookupError(f"{self.path}: class {class_name} defines no {name}()")
        node = _source.block_at(self.text, line).node
        ast.increment_lineno(node, line - 1)
        self.get(*sorted(n for n in free_names([node]) if n != name and self._known(n)))
        module = ast.Module(body=[node], type_ignores=[])
        ast.fix_missing_locations(module)
        exec(compile(module, self.path, "exec"), self.namespace)  # noqa: S102 - ART's own
        return self.namespace.pop(name), line

    def _known(self, name: str) -> bool:
        return name in self.stand_ins or name in self.index or name in self.imports

    def _import(self, name: str) -> Any:
        module, attr = self.imports[name]
        try:
            loaded = importlib.import_module(module)
            return loaded if attr is None else getattr(loaded, attr)
        except Exception as exc:  # a GPU package, or an ART file that imports one
            why = f"{type(exc).__name__}: {exc}"
            self.absent[name] = why
            return Absent(f"{module}.{attr}" if attr else module, why)


class SingleRank:
    """Stand-in for Megatron's ``parallel_state`` on one process: every rank is 0, every world
    size 1, every process group absent (None)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name.endswith("_rank"):
            return lambda *a, **k: 0
        if name.endswith(("_world_size", "_size")):
            return lambda *a, **k: 1
        if name.endswith(("_group", "_groups")):
            return lambda *a, **k: None
        if name.startswith(("is_", "model_parallel_is_")):
            return lambda *a, **k: False
        raise AbsentError(f"parallel_state.{name}: no single-rank stand-in for it")
