"""What a patch's code reaches for beyond numbers, read from its text before anything runs (#53).

The split (artbot judges the patched check's outputs on inputs it drew with a secret seed) holds
against a patch that rewrites a verdict, but the outputs still come from the process that runs
the patch: a patch can forge them (the tape found through ``gc``, the results pipe written at
import, the document rewritten ``atexit``) or act only under artbot's harness (gated on
``sys.modules``, the call stack, ``/etc/passwd``, the PID, plan objects in the heap, the
warnings filters, torch's thread count, CUDA's availability). Each needs code a numerical fix
to ART never needs, so :func:`scan` reads the patch's files with ``ast`` (never executed) and
names each such use, a :class:`Probe`, of one kind of :mod:`.probe_table`'s.

The rule: a probe counts only where the patched file has more of that (kind, text) than the
release's file (a multiset difference: ART's own ``os.environ`` reads do not count); in an
added file everything counts. Names are resolved through imports (``import os as o``,
``from os import getpid as g``, ``getattr(os, "getpid")``, ``torch.sys.modules``), through
``operator.attrgetter``/``methodcaller`` and ``functools.reduce(getattr, ...)``, and a module's
string constant reads as its literal (``getattr(torch, HEAD_DTYPE)``). A file
over :data:`MAX_BYTES`, not UTF-8, not Python, or that the parser cannot take (a syntax error,
too deep) is itself a probe. The most telling probe comes first (:func:`ranked`).

It is a heuristic a determined author can evade (a name built where no literal shows it, a
call through ART's own helpers): a clean scan vouches for nothing the diff does not show.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace

from ..verify.whole import type_statements_as_assignments
from .probe_literals import (
    ART_PACKAGE,
    constants,
    docstrings,
    false_literal,
    folded,
    gate_positions,
    literal_getattr,
)
from .probe_table import (
    ATTRIBUTES,
    DEVICE_BACKEND_CALLS,
    DEVICE_KINDS,
    GETTERS,
    HARNESS_LITERALS,
    HARNESS_MODULES,
    HARNESS_WORDS,
    IMPORTERS,
    LOG_STREAMS,
    LOG_WRITES,
    NAME_BY_VALUE,
    NAMES,
    REBINDING_GUARDED,
    REDUCERS,
    REROOTED,
    THREAD_LOCKS,
    WARNINGS_RECORDER,
    ProbeKind,
)

MAX_BYTES = 1 << 20  # a source file of ART's is under 100 KB
MAX_TEXT = 80  # a probe's text, as shown


@dataclass(frozen=True)
class Probe:
    """One use, in the patched text: ``path`` (``src/art/...``), its ``line``, its kind and
    what it is (a dotted name, an attribute, a literal)."""

    path: str
    line: int
    kind: ProbeKind
    text: str

    def shown(self) -> str:
        """``os.getpid`` at src/art/x.py:12"""
        return f"{self.text} at {self.path}:{self.line}"


def scan(path: str, before: str | None, after: str | None) -> tuple[Probe, ...]:
    """The probes the patch adds to one file: ``before`` the release's text, ``after`` the
    patched (None: no such file). A deleted file adds none."""
    if after is None:
        return ()
    if not path.endswith(".py"):
        return (Probe(path, 1, ProbeKind.unscanned, "not a Python file"),)
    found = list(_uses(path, after))
    if any(p.kind is ProbeKind.unscanned for p in found):
        if before is not None and any(p.kind is ProbeKind.unscanned for p in _uses(path, before)):
            # This Python cannot read the release's file either (3.12 syntax on 3.11): still
            # not scanned, and said so.
            here = f"{sys.version_info.major}.{sys.version_info.minor}"
            return tuple(replace(p, text=f"{p.text} on Python {here}, nor does the release's")
                         for p in found)  # fmt: skip
        return tuple(found)
    had = Counter((p.kind, p.text) for p in _uses(path, before)) if before is not None else {}
    known_lines = set((before or "").splitlines())
    after_lines = after.splitlines()
    extra = Counter((p.kind, p.text) for p in found) - Counter(had)
    out: list[Probe] = []
    for key, count in extra.items():
        uses = [p for p in found if (p.kind, p.text) == key]
        # The uses on lines the release does not have first: the patch's own lines.
        uses.sort(key=lambda p: (_line(after_lines, p.line) in known_lines, p.line))
        out += uses[:count]
    return tuple(sorted(out, key=lambda p: p.line))


def scan_files(files: Mapping[str, tuple[str | None, str | None]]) -> tuple[Probe, ...]:
    """:func:`scan` over ``{path: (release's text, patched text)}``, in path order."""
    return tuple(p for path in sorted(files) for p in scan(path, *files[path]))


def ranked(probes: Iterable[Probe]) -> tuple[Probe, ...]:
    """``probes`` the most telling first (by kind, in :class:`ProbeKind`'s order), each kind's
    in the order given: the answer's headline names the first."""
    order = {kind: n for n, kind in enumerate(ProbeKind)}
    return tuple(sorted(probes, key=lambda p: order[p.kind]))


def _line(lines: list[str], n: int) -> str:
    return lines[n - 1] if 0 < n <= len(lines) else ""


def _uses(path: str, text: str) -> Iterator[Probe]:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        yield Probe(path, 1, ProbeKind.unscanned, f"over {MAX_BYTES >> 10} KB")
        return
    try:
        tree = _parse(path, text)
    except SyntaxError as exc:
        yield Probe(path, exc.lineno or 1, ProbeKind.unscanned, "does not parse")
        return
    except (RecursionError, MemoryError, ValueError):
        yield Probe(path, 1, ProbeKind.unscanned, "the parser cannot take it")
        return
    try:
        yield from _Reader(path, tree).uses()
    except (RecursionError, MemoryError):
        yield Probe(path, 1, ProbeKind.unscanned, "the scanner cannot take it")


def _parse(path: str, text: str) -> ast.Module:
    """``text`` parsed; before Python 3.12, a file that does not parse has its ``type X = ...``
    statements read as ``X = ...`` (as ART's modules are imported there, verify/whole.py)."""
    try:
        return ast.parse(text, filename=path)
    except SyntaxError:
        if sys.version_info >= (3, 12):
            raise
        return ast.parse(type_statements_as_assignments(text), filename=path)


class _Reader:
    """One parsed file: its imports resolved, then each node read (iteratively)."""

    def __init__(self, path: str, tree: ast.Module):
        self.path = path
        self.tree = tree
        self.aliases: dict[str, str] = {}  # a local name -> the dotted name it was imported as
        self.bound: set[str] = set()  # names the file binds itself (shadowing a built-in)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    local = a.asname or a.name.split(".")[0]
                    self.aliases[local] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                base = ART_PACKAGE if node.level else (node.module or "")
                if not node.level and node.module is None:
                    continue
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{base}.{a.name}".strip(".")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.bound.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.bound.add(node.id)
            elif isinstance(node, ast.arg):
                self.bound.add(node.arg)
        self.consts = constants(tree, self.aliases)  # NAME = "literal", bound once
        self.callees = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        self.resolved: set[int] = set()  # getters and ``getattr``s read through where applied
        self.gates = gate_positions(tree)

    def mark_chain(self, node: ast.AST, seen: set[int]) -> None:
        """The inner nodes of a dotted name: read once, as the whole name."""
        while (step := self.step(node)) is not None:
            node = step[1]
            seen.add(id(node))

    def probe(self, node: ast.AST, kind: ProbeKind, text: str) -> Probe:
        flat = " ".join(text.split())
        if len(flat) > MAX_TEXT:
            flat = flat[: MAX_TEXT - 1] + "…"
        return Probe(self.path, getattr(node, "lineno", 1), kind, flat)

    def dotted(self, node: ast.AST) -> str | None:
        """``o.path.exists`` as ``os.path.exists`` (``getattr(o, "x")`` as ``os.x``); None
        when the chain does not start at a name."""
        parts: list[str] = []
        while True:
            if (step := self.step(node)) is not None:
                parts += reversed(step[0])
                node = step[1]
            elif isinstance(node, ast.Name):
                root = self.aliases.get(node.id)
                if root is None and node.id in self.bound:
                    return None  # the file's own name
                parts.append(root or node.id)
                return ".".join(reversed(parts))
            else:
                return None

    def step(self, node: ast.AST) -> tuple[list[str], ast.AST] | None:
        """One step into a name reached from an object: ``x.a``, ``getattr(x, "a")``,
        ``operator.attrgetter("a.b")(x)``, ``functools.reduce(getattr, ["a", "b"], x)``: the
        names (in order) and ``x``; None for anything else."""
        if isinstance(node, ast.Attribute):
            return [node.attr], node.value
        if not isinstance(node, ast.Call):
            return None
        if literal_getattr(node, self.consts):
            return [folded(node.args[1], self.consts) or ""], node.args[0]
        func, args = node.func, node.args
        if (
            isinstance(func, ast.Call)
            and len(args) == 1
            and not node.keywords
            and (names := self.getter_names(func)) is not None
        ):
            self.resolved.add(id(func))
            return names, args[0]
        if (
            len(args) == 3
            and isinstance(args[0], ast.Name)
            and args[0].id == "getattr"
            and isinstance(args[1], ast.List | ast.Tuple)
            and self.dotted(func) in REDUCERS
        ):
            names = [folded(e, self.consts) or "" for e in args[1].elts]
            if all(names):
                self.resolved.add(id(args[0]))
                return names, args[2]
        return None

    def getter_names(self, node: ast.Call) -> list[str] | None:
        """``operator.attrgetter("a.b")`` as ``["a", "b"]``, ``methodcaller("a", ...)`` as
        ``["a"]``; None when ``node`` is no such getter of one literal name."""
        getter = self.dotted(node.func)
        if getter not in GETTERS or not node.args or node.keywords and "attr" in getter:
            return None
        if "attr" in getter and len(node.args) != 1:
            return None
        name = folded(node.args[0], self.consts)
        if name is None:
            return None
        return name.split(".") if "attr" in getter else [name]

    def named(self, name: str) -> ProbeKind | None:
        if name in LOG_WRITES or name in THREAD_LOCKS:
            return None
        parts = name.split(".")
        if parts[:2] == ["torch", "backends"] and DEVICE_BACKEND_CALLS.count(parts[-1]):
            return ProbeKind.device
        for n in range(len(parts), 0, -1):
            if (kind := NAMES.get(".".join(parts[:n]))) is not None:
                return kind
        root = rerooted(name)
        if root != name:  # ``torch.sys.modules``: another module's reference to ``sys``
            return self.named(root) or ProbeKind.introspection
        return None

    def uses(self) -> Iterator[Probe]:
        seen_chain: set[int] = set()  # inner nodes of a dotted name already read
        seen_text: set[int] = set()  # parts of a string already read whole
        docs = docstrings(self.tree)
        seen_chain.update(self._log_streams())
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                yield from self._import(node)
            elif (
                isinstance(node, ast.Attribute | ast.Name | ast.Call) and id(node) not in seen_chain
            ):
                name = self.dotted(node) if not isinstance(node, ast.Call) else None
                if isinstance(node, ast.Call) and self.step(node) is not None:
                    name = self.dotted(node)
                elif isinstance(node, ast.Call) and self._art_import(node):
                    self.mark_chain(node.func, seen_chain)
                    seen_chain.add(id(node.func))
                if name is not None:
                    self.mark_chain(node, seen_chain)
                    if (kind := self.named(name)) is not None:
                        yield self.probe(node, kind, name)
            yield from self._reached(node)
            if isinstance(node, ast.Call):
                yield from self._call(node)
            elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
                yield from self._rebinding(node)
            elif (
                isinstance(node, ast.Constant | ast.JoinedStr | ast.BinOp)
                and id(node) not in seen_text
                and id(node) not in docs
            ):
                seen_text.update(id(n) for n in ast.walk(node))
                yield from self._string(node)
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) in self.gates
            ):
                device = node.value.lower().split(":")[0]
                if device in DEVICE_KINDS:  # ``x.device.type == "cuda"``, ``"cuda" in str(d)``
                    yield self.probe(node, ProbeKind.device, f"device kind {device!r}")

    def _reached(self, node: ast.AST) -> Iterator[Probe]:
        """An attribute of :data:`ATTRIBUTES` however named (``x.__module__``,
        ``getattr(x, "f_back")``), a getter of a name not applied where it is built, ``getattr``
        passed as a value, a device's ``.type`` where the code decides."""
        if (step := self.step(node)) is not None:
            for name in step[0]:
                if name in ATTRIBUTES:
                    yield self.probe(node, ATTRIBUTES[name], name)
            if step[0] == ["type"] and id(node) in self.gates:
                device = self.dotted(step[1]) or ast.unparse(step[1])
                if device.lower().endswith("device"):
                    yield self.probe(node, ProbeKind.device, "device.type")
        if isinstance(node, ast.Call) and id(node) not in self.resolved:
            getter = self.dotted(node.func)
            if getter in GETTERS:
                names = self.getter_names(node)
                if names is None:
                    yield self.probe(node, ProbeKind.dynamic, f"{getter} with a computed name")
                elif (kind := _TAILS.get(names[-1]) or ATTRIBUTES.get(names[-1])) is not None:
                    yield self.probe(node, kind, f"{getter}({'.'.join(names)!r})")
        if (
            isinstance(node, ast.Name)
            and node.id in NAME_BY_VALUE
            and isinstance(node.ctx, ast.Load)
            and id(node) not in self.callees | self.resolved
            and node.id not in self.bound | set(self.aliases)
        ):
            yield self.probe(node, ProbeKind.dynamic, f"{node.id} passed as a value")

    def _import(self, node: ast.Import | ast.ImportFrom) -> Iterator[Probe]:
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif node.level or node.module is None:
            return
        else:
            names = [f"{node.module}.{a.name}" for a in node.names]
            if any(a.name == "*" for a in node.names) and node.module.split(".")[0] != ART_PACKAGE:
                # every name of the module bound unseen: what it reaches cannot be read
                yield self.probe(node, ProbeKind.dynamic, f"from {node.module} import *")
                return
        for name in names:
            if name in IMPORTERS or name == "importlib":
                continue  # what it imports is read where it is called
            if any(lock.startswith(f"{name}.") for lock in THREAD_LOCKS):
                continue  # ``threading``: each use is read where it is (a lock, a thread)
            if (kind := self.named(name)) is not None:
                yield self.probe(node, kind, f"import {name}")

    def _art_import(self, node: ast.Call) -> bool:
        """``importlib.import_module("art.x")`` (or ``__package__ + ".x"``): an import of
        ART's own module, read as one."""
        if len(node.args) != 1 or node.keywords or self.dotted(node.func) not in IMPORTERS:
            return False
        name = folded(node.args[0], self.consts)
        return name is not None and (name.startswith(".") or name.split(".")[0] == ART_PACKAGE)

    def _own(self, node: ast.AST) -> bool:
        """``node`` is rooted at a name the file binds itself (``self``, a parameter, a local)."""
        while isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.bound and node.id not in self.aliases

    def _log_streams(self) -> Iterator[int]:
        """``sys.stderr`` where it is ``print``'s ``file=``: a write to a log artbot drops."""
        for node in ast.walk(self.tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "print"
                and "print" not in self.bound | set(self.aliases)
            ):
                for k in node.keywords:
                    if k.arg == "file" and self.dotted(k.value) in LOG_STREAMS:
                        seen = {id(k.value)}
                        self.mark_chain(k.value, seen)
                        yield from seen

    def _call(self, node: ast.Call) -> Iterator[Probe]:
        recorder, keywords = WARNINGS_RECORDER
        if rerooted(self.dotted(node.func) or "") == recorder:
            for k in node.keywords:
                if k.arg in keywords and not false_literal(k.value):
                    shown = f"{recorder}({k.arg}={ast.unparse(k.value)})"
                    yield self.probe(node, ProbeKind.introspection, shown)
                    break
        func = node.func
        if not isinstance(func, ast.Name) or func.id in self.bound or func.id in self.aliases:
            return
        if func.id == "vars" and not (node.args and self._own(node.args[0])):
            yield self.probe(node, ProbeKind.dynamic, "vars" + ("()" if not node.args else ""))
        if func.id in NAME_BY_VALUE:
            computed = len(node.args) < 2 or folded(node.args[1], self.consts) is None
            if computed and not (node.args and self._own(node.args[0])):
                yield self.probe(node, ProbeKind.dynamic, f"{func.id} with a computed name")
            elif func.id in ("setattr", "delattr") and self._guarded(node.args[0]):
                target = self.dotted(node.args[0]) or "?"
                yield self.probe(node, ProbeKind.rebinding, f"{func.id}({target}, ...)")

    def _guarded(self, node: ast.AST) -> bool:
        """``node`` is (in) an imported module the check's processes rely on
        (:data:`REBINDING_GUARDED`, the repros' ``_``-named modules), or reached through one
        (``peft.tuners.lora.torch.nn``); not ART's, nor a library ART patches by design."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute | ast.Subscript):
            if isinstance(node, ast.Attribute):
                parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return False
        path = self.aliases[node.id].split(".") + parts[::-1]
        if path[0] == ART_PACKAGE:
            return False
        through = REROOTED | {"torch", "numpy"}
        return (
            path[0] in REBINDING_GUARDED
            or path[0].startswith("_")
            or HARNESS_MODULES.search(path[0]) is not None
            or any(p in through for p in path[1:-1])
        )

    def _rebinding(self, node: ast.stmt) -> Iterator[Probe]:
        targets: list[ast.expr]
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        else:
            assert isinstance(node, ast.AugAssign | ast.AnnAssign)
            targets = [node.target]
        flat: list[ast.expr] = []
        while targets:
            t = targets.pop()
            if isinstance(t, ast.Tuple | ast.List):
                targets += t.elts
            elif isinstance(t, ast.Starred):
                targets.append(t.value)
            else:
                flat.append(t)
        for t in flat:
            if isinstance(t, ast.Attribute | ast.Subscript) and self._guarded(t):
                shown = self.dotted(t) if isinstance(t, ast.Attribute) else None
                yield self.probe(node, ProbeKind.rebinding, shown or ast.unparse(t))

    def _string(self, node: ast.AST) -> Iterator[Probe]:
        text = folded(node, self.consts)
        if text is None or not text:
            return
        low = text.lower()
        if (
            low in HARNESS_LITERALS
            or any(w in low for w in HARNESS_WORDS)
            or HARNESS_MODULES.search(low)
        ):
            yield self.probe(node, ProbeKind.harness, repr(text))


# ``operator.methodcaller("getpid")`` built apart from its object: read by its last name.
_TAILS = {key.rpartition(".")[2]: kind for key, kind in reversed(list(NAMES.items())) if "." in key}


def rerooted(name: str) -> str:
    """``torch.sys.modules`` as ``sys.modules``: a dotted name from its first module of
    :data:`REROOTED` past the first part (``name`` itself when none)."""
    parts = name.split(".")
    for n in range(1, len(parts)):
        if parts[n] in REROOTED:
            return ".".join(parts[n:])
    return name
