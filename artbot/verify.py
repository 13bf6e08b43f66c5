"""Check the findings against real ART code: a git checkout, an unpacked wheel, or a release.

Two checks, each a plain function returning values (the CLI only prints them):

- :func:`verify_anchors`: does every cited range still hold its anchor line? Each location gets
  ``ok``, ``moved`` (with the range that holds the anchor now), ``missing``, ``out of range`` or
  ``no anchor``.
- :func:`verify_code`: for the items whose code runs on CPU, run the repro's ``measure`` with
  ART's own function in place of the repro's model, and say whether the finding still
  reproduces.

ART's modules are imported one file at a time (:class:`ArtModules`): ART's package
``__init__`` files import every backend, so they are replaced by empty synthetic packages and
only the files the checked function needs are executed. Third-party imports must be
installed, except for the few in :data:`STAND_INS`.

:func:`fetch_release` puts an ``openpipe-art`` wheel in a cache (pip, in a subprocess) and
unpacks it. :func:`verification_notes`, :func:`verification_comment` and
:func:`comments_to_post` turn results into checklist notes and issue comments; they are pure.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
import warnings
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from types import ModuleType
from typing import Any

from .catalog import Catalog
from .errors import ArtbotError, BadInput
from .models import Audit, Location

DISTRIBUTION = "openpipe-art"
WHEEL_PREFIX = "openpipe_art"
# ART needs Python 3.12; the wheel is pure Python, so the tag only has to satisfy pip.
WHEEL_PYTHON = "3.12"
CACHE_ENV = "ARTBOT_CACHE_DIR"

# Third-party packages that ART's checked files import at module level (for type names, or for
# remote calls), that artbot does not depend on, and whose code no checked function runs. Each
# is replaced by a stand-in only when the real package is not importable, and every result
# lists the stand-ins it used. Any other missing import makes the check "could not run",
# naming the module.
STAND_INS: dict[str, str] = {
    "openai": "OpenAI API client; ART imports it for chat-completion types",
    "tinker": "client of the remote Tinker training service",
    "tinker_cookbook": "prompt renderers for the Tinker service",
    "transformers": "Hugging Face models; preprocessing/tokenize.py imports it for tokenizer types",
}


class ReleaseUnavailable(ArtbotError):
    """The wheel of a release could not be fetched or unpacked."""

    exit_code = 1


# --------------------------------------------------------------------------- ART trees


@dataclass(frozen=True)
class ArtTree:
    """Where ART's source is, and how to read the audited paths from it.

    ``package_dir`` is the ``art/`` folder on disk (what code checks import); ``packages`` are
    the top-level packages of the same distribution beside it (0.5.21 ships ``art_inference``
    next to ``art``). Anchors are read from ``git show <commit>:<path>`` when ``commit`` is
    set, else from ``package_dir``.
    """

    label: str
    package_dir: Path
    source_root: str
    git_dir: Path | None = None
    commit: str | None = None
    notes: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()

    def modules(self) -> ArtModules:
        """A fresh import context for this tree's packages."""
        return ArtModules(self.package_dir, siblings=self.packages)

    def read(self, path: str) -> str | None:
        """Text of an audited path (``src/art/...``), or None when the file is absent."""
        if self.git_dir is not None and self.commit is not None:
            proc = subprocess.run(
                ["git", "-C", str(self.git_dir), "show", f"{self.commit}:{path}"],
                capture_output=True,
                check=False,
            )
            return proc.stdout.decode("utf-8", errors="replace") if proc.returncode == 0 else None
        file = self.package_dir / path.removeprefix(self.source_root)
        try:
            return file.read_text(encoding="utf-8", errors="replace")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None


def open_tree(directory: Path, audit: Audit, *, label: str | None = None) -> ArtTree:
    """Recognise ``directory``: a git checkout, a folder holding ``art/`` (an unpacked wheel),
    or the ``art/`` folder itself."""
    directory = Path(directory)
    tree = _recognise(directory, audit, label)
    # In a checkout with a src/ layout, the packages beside art/ are the same project's.
    src_layout = tree.package_dir.parent != directory and (directory / tree.source_root).is_dir()
    return replace(tree, packages=_distribution_packages(tree.package_dir, src_layout))


def _recognise(directory: Path, audit: Audit, label: str | None) -> ArtTree:
    root = audit.source_root.rstrip("/") + "/"
    package = root.rstrip("/").rsplit("/", 1)[-1]
    if not directory.is_dir():
        raise BadInput(f"--art-src {directory}: not a directory")
    if (directory / ".git").exists() and (directory / root).is_dir():
        package_dir = directory / root
        if _git_has_commit(directory, audit.commit):
            return ArtTree(
                label=f"{directory} at {audit.commit}",
                package_dir=package_dir,
                source_root=root,
                git_dir=directory,
                commit=audit.commit,
                notes=(
                    f"anchors read at the audit commit {audit.commit}; code runs the working tree",
                ),
            )
        return ArtTree(
            label=label or f"{directory} (working tree)",
            package_dir=package_dir,
            source_root=root,
            notes=(
                f"the audit commit {audit.commit} is not in {directory}; "
                "anchors read from the working tree",
            ),
        )
    if (directory / root).is_dir():
        return ArtTree(
            label or str(directory),
            directory / root,
            root,
            notes=("not a git repository; files read as they are",),
        )
    if (directory / package).is_dir():
        return ArtTree(
            label or _wheel_label(directory) or str(directory), directory / package, root
        )
    if directory.name == package and (directory / "__init__.py").is_file():
        return ArtTree(label or _wheel_label(directory.parent) or str(directory), directory, root)
    raise BadInput(
        f"--art-src {directory}: expected a git checkout with {root}, a folder holding "
        f"{package}/ (an unpacked wheel) or the {package}/ folder itself"
    )


def _distribution_packages(package_dir: Path, src_layout: bool) -> tuple[str, ...]:
    """Top-level packages shipped with ``art/``: a wheel's RECORD names them; in a src/
    checkout they are the packages beside it; otherwise ``art`` alone."""
    parent = package_dir.parent
    records = sorted(parent.glob(f"{WHEEL_PREFIX}-*.dist-info/RECORD"))
    if records:
        paths = (row.split(",", 1)[0] for row in records[0].read_text("utf-8").splitlines())
        tops = {p.split("/", 1)[0] for p in paths if "/" in p}
    elif src_layout:
        tops = {d.name for d in parent.iterdir()}
    else:
        tops = set()
    found = {t for t in tops if (parent / t / "__init__.py").is_file()}
    return tuple(sorted(found | {package_dir.name}))


def _git_has_commit(directory: Path, commit: str) -> bool:
    proc = subprocess.run(
        ["git", "-C", str(directory), "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    return proc.returncode == 0


def _wheel_label(folder: Path) -> str | None:
    """``openpipe-art 0.5.21`` when ``folder`` holds the wheel's dist-info."""
    for meta in sorted(folder.glob(f"{WHEEL_PREFIX}-*.dist-info")):
        version = meta.name[len(WHEEL_PREFIX) + 1 : -len(".dist-info")]
        return f"{DISTRIBUTION} {version}"
    return None


# --------------------------------------------------------------------------- anchors


class AnchorStatus(StrEnum):
    ok = "ok"
    moved = "moved"
    missing = "missing"
    out_of_range = "out of range"
    no_anchor = "no anchor"

    @property
    def failed(self) -> bool:
        """Whether the location needs attention (``no anchor`` cannot be checked, so it is not)."""
        return self not in (AnchorStatus.ok, AnchorStatus.no_anchor)


@dataclass(frozen=True)
class AnchorResult:
    item: int
    path: str
    lines: tuple[int, int]
    anchor: str | None
    status: AnchorStatus
    new_lines: tuple[int, int] | None = None
    detail: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "path": self.path,
            "lines": list(self.lines),
            "anchor": self.anchor,
            "status": self.status.value,
            "new_lines": list(self.new_lines) if self.new_lines else None,
            "detail": self.detail,
        }


def check_location(
    location: Location, text: str | None
) -> tuple[AnchorStatus, tuple[int, int] | None, str]:
    """Status of one location against a file's text (None: the file is absent).

    An anchor matches a line when both are equal once stripped. When it sits outside the range,
    the new range keeps the range's length and is the smallest shift that brings the nearest
    occurrence back in: the audit does not record where in its range the anchor was.
    """
    if text is None:
        return AnchorStatus.missing, None, "file not found"
    lines = text.splitlines()
    n = len(lines)
    start, end = location.lines
    in_bounds = end <= n
    if location.anchor is None:
        if in_bounds:
            return AnchorStatus.no_anchor, None, "no anchor to check"
        return AnchorStatus.out_of_range, None, f"the file has {n} lines"
    wanted = location.anchor.strip()
    hits = [i for i, line in enumerate(lines, 1) if line.strip() == wanted]
    inside = [h for h in hits if start <= h <= end]
    if in_bounds and inside:
        return AnchorStatus.ok, None, f"anchor at line {inside[0]}"
    if hits:
        hit = min(hits, key=lambda h: (_distance(h, start, end), h))
        new = _shifted(start, end, hit, n)
        also = [h for h in hits if h != hit]
        more = f" (also at {', '.join(map(str, also))})" if also else ""
        return AnchorStatus.moved, new, f"anchor at line {hit}{more}"
    if not in_bounds:
        return AnchorStatus.out_of_range, None, f"the file has {n} lines; anchor not found"
    return AnchorStatus.missing, None, "anchor not found in the file"


def _distance(line: int, start: int, end: int) -> int:
    return start - line if line < start else max(0, line - end)


def _shifted(start: int, end: int, hit: int, n: int) -> tuple[int, int]:
    length = end - start + 1
    new_start = start + hit - min(max(hit, start), end)
    new_start = max(1, min(new_start, n - length + 1))
    return new_start, min(n, new_start + length - 1)


def verify_anchors(catalog: Catalog, tree: ArtTree) -> list[AnchorResult]:
    """Every location of every finding, checked against ``tree``."""
    texts: dict[str, str | None] = {}
    results = []
    for finding in catalog.findings:
        for location in finding.locations:
            if location.path not in texts:
                texts[location.path] = tree.read(location.path)
            status, new_lines, detail = check_location(location, texts[location.path])
            results.append(
                AnchorResult(
                    finding.item,
                    location.path,
                    location.lines,
                    location.anchor,
                    status,
                    new_lines,
                    detail,
                )
            )
    return results


# --------------------------------------------------------------------------- importing ART


class NotLoadedError(RuntimeError):
    """A checked function used an ART name that only a package ``__init__`` defines."""


class Unloaded:
    """Placeholder for a name defined in a package ``__init__``, which is never executed.

    Harmless where ART only names it (annotations, ``from x import y``); any use raises
    :class:`NotLoadedError` naming it, so a check that needs it fails loudly.
    """

    def __init__(self, qualname: str, why: str):
        object.__setattr__(self, "_qualname", qualname)
        object.__setattr__(self, "_why", why)

    def __repr__(self) -> str:
        return f"<{self._qualname}: not loaded, {self._why}>"

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise NotLoadedError(f"{self._qualname} is used, but {self._why}")

    __call__ = _fail
    __getitem__ = _fail
    __iter__ = _fail
    __mro_entries__ = _fail

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._fail()

    def __or__(self, other: Any) -> Any:  # ``X | None`` in an annotation
        return self

    __ror__ = __or__


class _SyntheticPackage(ModuleType):
    """An ART package whose ``__init__`` is not executed: submodules and the names its
    ``__init__`` re-exports from them are loaded when first asked for."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        resolve: Callable[[ModuleType, str], Any] = self.__dict__["_artbot_resolve"]
        return resolve(self, name)


class _StandIn:
    """Base of stand-in classes: they can be named, subclassed and used in annotations;
    creating one raises."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        raise NotLoadedError(f"{cls.__module__}.{cls.__qualname__} is a stand-in, not the real one")

    def __class_getitem__(cls, item: Any) -> Any:  # ``AsyncStream[Chunk]`` in an annotation
        return cls

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.any_schema()


class _StandInModule(ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        made = type(name, (_StandIn,), {"__module__": self.__name__, "__qualname__": name})
        setattr(self, name, made)
        return made


class ArtModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """ART's modules from one ``art/`` folder, in ``sys.modules`` only while the context is open.

    Inside the context ``import art.x.y`` resolves to the single file ``art/x/y.py`` (loaded
    with ``spec_from_file_location``); every ART package is an empty synthetic module, so no
    ``__init__.py`` runs. On exit every ``art`` module (and stand-in) is removed and whatever
    was there before is put back, so two releases never mix.
    """

    def __init__(
        self,
        package_dir: Path,
        *,
        siblings: Iterable[str] = (),
        stand_ins: dict[str, str] | None = None,
    ):
        self.package_dir = Path(package_dir)
        self.name = self.package_dir.name
        names = {self.name, *siblings}
        self.roots = {n: self.package_dir.parent / n for n in sorted(names)}
        self.stand_ins = STAND_INS if stand_ins is None else stand_ins
        self.stand_ins_used: set[str] = set()
        self.not_loaded: list[str] = []
        self._real: set[str] = set()
        self._saved: dict[str, ModuleType] = {}
        self._exports: dict[str, tuple[dict[str, tuple[str, str]], set[str]] | str] = {}
        self._dont_write_bytecode = sys.dont_write_bytecode

    # context ------------------------------------------------------------------------
    def __enter__(self) -> ArtModules:
        self._real = {
            top for top in self.stand_ins if importlib.machinery.PathFinder.find_spec(top)
        }
        for key in list(sys.modules):
            if self._ours(key):
                self._saved[key] = sys.modules.pop(key)
        sys.meta_path.insert(0, self)
        # Never write __pycache__ into someone's checkout.
        sys.dont_write_bytecode = True
        importlib.invalidate_caches()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)
        sys.dont_write_bytecode = self._dont_write_bytecode
        for key in list(sys.modules):
            if self._ours(key) and (
                not self._is_stand_in_name(key) or isinstance(sys.modules[key], _StandInModule)
            ):
                del sys.modules[key]
        sys.modules.update(self._saved)
        self._saved = {}

    def _ours(self, key: str) -> bool:
        top = key.split(".", 1)[0]
        return top in self.roots or (top in self.stand_ins and top not in self._real)

    def _is_stand_in_name(self, key: str) -> bool:
        return key.split(".", 1)[0] in self.stand_ins

    def load(self, relpath: str) -> ModuleType:
        """Import ``art/<relpath>`` (e.g. ``loss.py``, ``tinker_native/data.py``)."""
        dotted = ".".join([self.name, *Path(relpath).with_suffix("").parts])
        return importlib.import_module(dotted)

    # finder -------------------------------------------------------------------------
    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        parts = fullname.split(".")
        if parts[0] in self.roots:
            where = self.roots[parts[0]].joinpath(*parts[1:])
            if where.is_dir():
                spec = importlib.machinery.ModuleSpec(fullname, self, is_package=True)
                spec.loader_state = ("package", where)
                spec.submodule_search_locations = []
                return spec
            file = where.with_suffix(".py")
            if file.is_file():
                return importlib.util.spec_from_file_location(fullname, file)
            return None
        if parts[0] in self.stand_ins and parts[0] not in self._real:
            self.stand_ins_used.add(parts[0])
            spec = importlib.machinery.ModuleSpec(fullname, self, is_package=True)
            spec.loader_state = ("stand-in", None)
            spec.submodule_search_locations = []
            return spec
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        kind, _ = spec.loader_state
        if kind == "stand-in":
            return _StandInModule(spec.name)
        module = _SyntheticPackage(spec.name)
        module.__dict__["_artbot_resolve"] = self._resolve
        return module

    def exec_module(self, module: ModuleType) -> None:
        return None

    # names of synthetic packages ----------------------------------------------------
    def _resolve(self, package: ModuleType, name: str) -> Any:
        spec = package.__spec__
        assert spec is not None
        _, where = spec.loader_state
        if (where / name).is_dir() or (where / f"{name}.py").is_file():
            return importlib.import_module(f"{package.__name__}.{name}")
        exports = self._package_exports(package.__name__, where)
        qualname = f"{package.__name__}.{name}"
        if isinstance(exports, str):  # the __init__ could not be parsed here
            value: Any = Unloaded(qualname, exports)
        elif name in exports[0]:
            module, original = exports[0][name]
            value = getattr(importlib.import_module(module), original)
        elif name in exports[1]:
            value = Unloaded(qualname, f"{package.__name__}/__init__.py defines it and is not run")
        else:
            raise AttributeError(f"module {package.__name__!r} has no attribute {name!r}")
        if isinstance(value, Unloaded):
            self.not_loaded.append(qualname)
        setattr(package, name, value)
        return value

    def _package_exports(
        self, package: str, where: Path
    ) -> tuple[dict[str, tuple[str, str]], set[str]] | str:
        """Names the package ``__init__`` imports from other ART modules, and the names it
        defines itself; a reason string when it cannot be parsed by this Python."""
        if package in self._exports:
            return self._exports[package]
        init = where / "__init__.py"
        result: tuple[dict[str, tuple[str, str]], set[str]] | str
        try:
            source = init.read_text(encoding="utf-8") if init.is_file() else ""
            tree = ast.parse(source)
        except SyntaxError as exc:
            result = (
                f"{package}/__init__.py needs a newer Python than "
                f"{sys.version_info.major}.{sys.version_info.minor} (line {exc.lineno})"
            )
        else:
            result = _exports_of(tree, package, set(self.roots))
        self._exports[package] = result
        return result


def _exports_of(
    tree: ast.Module, package: str, tops: set[str]
) -> tuple[dict[str, tuple[str, str]], set[str]]:
    reexports: dict[str, tuple[str, str]] = {}
    defined: set[str] = set()
    for node in _top_level(tree.body):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module])
            else:
                module = node.module
            if module.split(".", 1)[0] in tops:
                for alias in node.names:
                    reexports[alias.asname or alias.name] = (module, alias.name)
                continue
        for target in _bound_names(node):
            defined.add(target)
    return reexports, defined


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for node in body:
        if isinstance(node, ast.If):
            if isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                continue
            yield from _top_level(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from _top_level(node.body + node.orelse + node.finalbody)
        else:
            yield node


def _bound_names(node: ast.stmt) -> Iterator[str]:
    if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        yield node.name
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            yield (alias.asname or alias.name).split(".", 1)[0]
    elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            for leaf in ast.walk(target):
                if isinstance(leaf, ast.Name):
                    yield leaf.id


# --------------------------------------------------------------------------- code checks


class CodeStatus(StrEnum):
    reproduced = "reproduced"
    fixed = "fixed"
    could_not_run = "could not run"


@dataclass(frozen=True)
class CodeResult:
    """One item's repro, run against ART's own function from one tree."""

    item: int
    status: CodeStatus
    source: str
    detail: str
    ran: tuple[str, ...] = ()  # ART functions executed, as art/<file>:<name>
    scope: str | None = None  # the part of the finding checked, when not all of it
    stand_ins: tuple[str, ...] = ()
    not_loaded: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "status": self.status.value,
            "source": self.source,
            "detail": self.detail,
            "ran": list(self.ran),
            "scope": self.scope,
            "stand_ins": list(self.stand_ins),
            "not_loaded": list(self.not_loaded),
        }


@dataclass(frozen=True)
class CheckOutcome:
    """What one check measured: whether the finding holds, in a line, and what ART code ran."""

    reproduced: bool
    detail: str
    ran: tuple[str, ...]
    scope: str | None = None


@dataclass(frozen=True)
class CodeCheck:
    """How to run one item's repro against ART: ``run(repro_module, art) -> CheckOutcome``."""

    item: int
    run: Callable[[ModuleType, ArtModules], CheckOutcome]


def _item07(repro: ModuleType, art: ArtModules) -> CheckOutcome:
    loss = art.load("loss.py")
    measured = repro.measure(loss.loss_fn)
    return CheckOutcome(
        repro.is_reproduced(measured),
        f"max |TIS factor - 1| = {measured['max_abs_factor_minus_1']:.3g} without "
        f"original_logprobs (U = {measured['upper_bound']:g}; 0 when TIS is skipped)",
        (f"{art.name}/loss.py:loss_fn",),
    )


def _item08(repro: ModuleType, art: ArtModules) -> CheckOutcome:
    loss = art.load("loss.py")
    measured = repro.measure(loss.loss_fn)
    case = measured["cases"]["ppo A=-1 old=-inf"]
    finite = case["grad_logits_finite"] and case["grad_logprobs_finite"]
    return CheckOutcome(
        repro.is_reproduced(measured),
        f"PPO, A = -1, old logprob -inf: loss {case['loss']:.4g}, "
        f"gradients {'finite' if finite else 'not finite'}",
        (f"{art.name}/loss.py:loss_fn",),
    )


def _item10(repro: ModuleType, art: ArtModules) -> CheckOutcome:
    data = art.load("tinker_native/data.py")
    measured = repro.measure(data.compute_advantages)
    ratios = ", ".join(f"n={n}: {m['ratio_median']:.4f}" for n, m in measured.items())
    return CheckOutcome(
        repro.is_reproduced(measured),
        f"advantage ratio to the population-std backends (median) {ratios}",
        (f"{art.name}/tinker_native/data.py:compute_advantages",),
    )


# service.py builds the per-datum masks inline; which builder a release uses is read from it.
_ITEM09_INLINE_MASK = '| (packed_tensors["parent_ids"][i] == parent_id)'
_ITEM09_SCOPE = "per-datum masks run; the optimizer-step count is modelled"


def _item09(repro: ModuleType, art: ArtModules) -> CheckOutcome:
    packing = art.load("megatron/prefix_tree_packing.py")
    service = _source_lines(art, "tinker/service.py")
    ran = [f"{art.name}/megatron/prefix_tree_packing.py:prefix_tree_pack"]
    if any("parse_prefix_tree_row(" in line for line in service):
        parse = art.load("megatron/prefix_tree.py").parse_prefix_tree_row

        def masks(group_ids: Any, parent_ids: Any) -> list[tuple[int, Any]]:
            # service.py selects, for each segment, the segment's group and its ancestors.
            row = parse(group_ids=group_ids, parent_ids=parent_ids)
            return [
                (s.group_id, _isin(group_ids, (s.group_id, *s.ancestors))) for s in row.segments
            ]

        mask_impl: Callable[..., Any] = masks
        how = "ART's parse_prefix_tree_row"
        ran.append(f"{art.name}/megatron/prefix_tree.py:parse_prefix_tree_row")
    elif _ITEM09_INLINE_MASK in service:
        mask_impl = repro.tinker_datum_masks
        how = "the repro's model of the inline mask expression found in tinker/service.py"
    else:
        raise _CannotRun(
            f"{art.name}/tinker/service.py builds its masks neither with the audited inline "
            "expression nor with parse_prefix_tree_row"
        )
    measured = repro.measure(mask_impl, pack_impl=packing.prefix_tree_pack)
    two = measured["two_branch"]
    leaks = {g: v for g, v in two["extra"].items() if v}
    return CheckOutcome(
        repro.is_reproduced(measured),
        f"two-branch row, masks from {how}: positions leaked into datums {leaks or 'none'}, "
        f"{two['wrong_context_tokens']} of {two['trainable_tokens']} trainable tokens in the "
        "wrong context" + _item09_optim_step(repro, art),
        tuple(ran),
        scope=_ITEM09_SCOPE,
    )


def _item09_optim_step(repro: ModuleType, art: ArtModules) -> str:
    # The second claim (one optimizer step per packed row), read from the source by AST; it is
    # not yet part of the verdict, which covers the masks only.
    file = art.package_dir / "tinker/service.py"
    per_row = repro.optim_step_per_row(file.read_text(encoding="utf-8")) if file.is_file() else None
    if per_row is None:
        return "; optimizer step: TinkerService.train not found (not checked)"
    where = "inside" if per_row else "outside"
    return (
        f"; optimizer step: optim_step_async {where} the per-row loop (AST of TinkerService.train)"
    )


def _isin(values: Any, wanted: tuple[int, ...]) -> Any:
    import torch

    return torch.isin(values, values.new_tensor(wanted))


def _item03(repro: ModuleType, art: ArtModules) -> CheckOutcome:
    for hook in ("advantages_impl", "pack_impl"):
        if hook not in inspect.signature(repro.measure).parameters:
            raise _CannotRun(f"the repro's measure() takes no {hook}=")
    pack = art.load("preprocessing/pack.py")
    ran = [f"{art.name}/preprocessing/pack.py:packed_tensors_from_tokenized_results"]
    # The GRPO advantage is inline in tokenize_trajectory_groups (a generator that needs a
    # tokenizer and Trajectory objects); which version a release has is read from its source.
    tokenize = _source_lines(art, "preprocessing/tokenize.py")
    if any("rewards_have_zero_variance(" in line for line in tokenize):
        zero_variance = art.load("utils/grpo.py").rewards_have_zero_variance

        def advantages(rewards: Sequence[float], scale_rewards: bool) -> list[float | None]:
            # tokenize.py gives a zero-variance group advantage 0, which drops it.
            if zero_variance(list(rewards)):
                return [None] * len(rewards)
            return list(repro.grpo_advantages(rewards, scale_rewards))

        advantages_impl: Callable[..., Any] = advantages
        how = "ART's rewards_have_zero_variance around the repro's model of the advantage block"
        ran.append(f"{art.name}/utils/grpo.py:rewards_have_zero_variance")
    elif _ITEM03_INLINE_ADVANTAGE in tokenize:
        advantages_impl = repro.grpo_advantages
        how = "the repro's model of the inline advantage block found in tokenize.py"
    else:
        raise _CannotRun(
            f"{art.name}/preprocessing/tokenize.py computes GRPO advantages neither as audited "
            "nor with rewards_have_zero_variance"
        )
    measured = repro.measure(advantages_impl, pack_impl=pack.packed_tensors_from_tokenized_results)
    group = measured["full_scale"]["equal_group"]
    if group["tokens"]:
        trained = (
            f"the equal-reward group trains on {group['tokens']} tokens at packed advantage "
            f"{_fmt_range(group['min'], group['max'])}"
        )
    else:
        trained = "the equal-reward group is dropped"
    nan, inf = measured["nan_balance"], measured["neg_inf"]
    return CheckOutcome(
        repro.is_reproduced(measured),
        f"advantages from {how}: {trained}; NaN advantages with advantage_balance=1: "
        f"{nan['nan_tokens']} of {nan['assistant_tokens']} tokens, with a group of -inf "
        f"rewards: {inf['nan_tokens']} of {inf['assistant_tokens']}",
        tuple(ran),
        scope="pack normalization run; the GRPO advantage block is modelled",
    )


_ITEM03_INLINE_ADVANTAGE = "advantage /= reward_std + 1e-6"


def _fmt_range(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "NaN"
    return f"{low:.3g}" if low == high else f"{low:.3g} to {high:.3g}"


def _source_lines(art: ArtModules, relpath: str) -> list[str]:
    """Stripped lines of an ART file (empty when absent), to tell which version it holds."""
    file = art.package_dir / relpath
    text = file.read_text(encoding="utf-8") if file.is_file() else ""
    return [line.strip() for line in text.splitlines()]


class _CannotRun(Exception):
    """A check cannot run against this tree, for the reason given."""


CODE_CHECKS: dict[int, CodeCheck] = {
    c.item: c
    for c in (
        CodeCheck(3, _item03),
        CodeCheck(7, _item07),
        CodeCheck(8, _item08),
        CodeCheck(9, _item09),
        CodeCheck(10, _item10),
    )
}


def load_repro(path: Path) -> ModuleType:
    """Import a repro script by path, leaving ``sys.path`` and ``sys.modules`` as they were."""
    name = f"_artbot_repro_{path.stem}"
    saved_path = list(sys.path)
    # The script imports its folder's helper modules (_common, _art_loss, ...) by bare name:
    # load this folder's, and put back whatever was there before.
    helpers = {p.stem for p in path.parent.glob("_*.py")}
    saved = {h: sys.modules.pop(h) for h in helpers if h in sys.modules}
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise _CannotRun(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved_path
        sys.modules.pop(name, None)
        for helper in helpers:
            sys.modules.pop(helper, None)
        sys.modules.update(saved)
    return module


def verify_code(
    catalog: Catalog,
    tree: ArtTree,
    items: Iterable[int] | None = None,
    *,
    checks: Mapping[int, CodeCheck] = CODE_CHECKS,
) -> list[CodeResult]:
    """Run each CPU-checkable item's repro against ART's own function from ``tree``."""
    wanted = set(catalog.items if items is None else items)
    return [
        _run_check(catalog, tree, checks[item])
        for item in sorted(wanted & set(checks) & set(catalog.items))
    ]


def _run_check(catalog: Catalog, tree: ArtTree, check: CodeCheck) -> CodeResult:
    finding = catalog.get(check.item)
    script = catalog.root / finding.repro
    art = tree.modules()

    def failed(why: str) -> CodeResult:
        return CodeResult(
            check.item,
            CodeStatus.could_not_run,
            tree.label,
            why,
            stand_ins=tuple(sorted(art.stand_ins_used)),
            not_loaded=tuple(art.not_loaded),
        )

    if not script.is_file():
        return failed(f"{finding.repro} not found")
    try:
        repro = load_repro(script)
        with art, warnings.catch_warnings():
            # ART warns where it skips work (0.5.21 skipping TIS); the measurement says it.
            warnings.simplefilter("ignore")
            outcome = check.run(repro, art)
    except _CannotRun as exc:
        return failed(str(exc))
    except ModuleNotFoundError as exc:
        name = exc.name or str(exc)
        if name == art.name or name.startswith(art.name + "."):
            why = f"missing module {name}: not in this tree"
        else:
            why = f"missing module {name}: not installed, and not one of the stand-ins"
        return failed(why + _where(exc, tree))
    except NotLoadedError as exc:
        return failed(str(exc) + _where(exc, tree))
    except SyntaxError as exc:
        return failed(
            f"{exc.filename}:{exc.lineno}: cannot be compiled by Python "
            f"{sys.version_info.major}.{sys.version_info.minor}: {exc.msg}"
        )
    except Exception as exc:  # an error inside ART or the repro is a result worth showing
        return failed(f"{type(exc).__name__}: {exc}{_where(exc, tree)}")
    return CodeResult(
        check.item,
        CodeStatus.reproduced if outcome.reproduced else CodeStatus.fixed,
        tree.label,
        outcome.detail,
        ran=outcome.ran,
        scope=outcome.scope,
        stand_ins=tuple(sorted(art.stand_ins_used)),
        not_loaded=tuple(art.not_loaded),
    )


def _where(exc: BaseException, tree: ArtTree) -> str:
    """`` (at art/x.py:N)`` for the innermost frame of the error inside ART's packages."""
    base = tree.package_dir.parent
    roots = [base / name for name in tree.packages]
    inside = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if frame.filename and any(Path(frame.filename).is_relative_to(r) for r in roots)
    ]
    if not inside:
        return ""
    frame = inside[-1]
    return f" (at {Path(frame.filename).relative_to(base).as_posix()}:{frame.lineno})"


# --------------------------------------------------------------------------- releases


def cache_dir() -> Path:
    """Where release wheels are kept: ``$ARTBOT_CACHE_DIR``, else ``~/.cache/artbot/wheels``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "artbot" / "wheels"


_VERSION_RE = re.compile(r"^[0-9][0-9A-Za-z.+!-]*$")
Runner = Callable[..., subprocess.CompletedProcess[str]]


def fetch_release(version: str, cache: Path | None = None, *, run: Runner = subprocess.run) -> Path:
    """The wheel of ``openpipe-art==version``: from the cache, else downloaded there by pip."""
    if not _VERSION_RE.match(version):
        raise BadInput(f"--release {version!r}: not a version number")
    cache = Path(cache) if cache else cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    wheel = _cached_wheel(cache, version)
    if wheel:
        return wheel
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--python-version", WHEEL_PYTHON, f"{DISTRIBUTION}=={version}", "-d", str(cache),
    ]  # fmt: skip
    proc = run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-3:]
        raise ReleaseUnavailable(
            f"pip could not download {DISTRIBUTION}=={version}: " + " / ".join(tail)
        )
    wheel = _cached_wheel(cache, version)
    if wheel is None:
        raise ReleaseUnavailable(f"pip ran, but no {WHEEL_PREFIX}-{version}-*.whl is in {cache}")
    return wheel


def _cached_wheel(cache: Path, version: str) -> Path | None:
    found = sorted(cache.glob(f"{WHEEL_PREFIX}-{version}-*.whl"))
    return found[0] if found else None


_UNPACKED = ".artbot-unpacked"


def unpack_wheel(wheel: Path, dest: Path | None = None) -> Path:
    """Unpack ``wheel`` next to it (once); returns the folder that holds ``art/``."""
    dest = dest or wheel.with_name(wheel.name.removesuffix(".whl"))
    if (dest / _UNPACKED).is_file():
        return dest
    # Unpack beside the target and rename, so an interrupted run never leaves half a tree.
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".unpack-"))
    try:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(tmp)
        (tmp / _UNPACKED).write_text(wheel.name + "\n", encoding="utf-8")
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
    except zipfile.BadZipFile as exc:
        raise ReleaseUnavailable(f"{wheel} is not a valid wheel: {exc}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def release_tree(version: str, audit: Audit, cache: Path | None = None) -> ArtTree:
    """The unpacked wheel of ``openpipe-art==version``, fetched into the cache if needed."""
    folder = unpack_wheel(fetch_release(version, cache))
    return open_tree(folder, audit, label=f"{DISTRIBUTION} {version}")


# --------------------------------------------------------------------------- notes, comments


def verification_notes(results: Iterable[CodeResult]) -> dict[int, str]:
    """One line per item for the tracking checklist, e.g. ``no longer reproduces in
    openpipe-art 0.5.21``."""
    notes: dict[int, str] = {}
    for r in results:
        scope = f" ({r.scope})" if r.scope else ""
        if r.status is CodeStatus.reproduced:
            notes[r.item] = f"still reproduces in {r.source}{scope}"
        elif r.status is CodeStatus.fixed:
            notes[r.item] = f"no longer reproduces in {r.source}{scope}"
        else:
            notes[r.item] = f"could not be checked against {r.source}: {r.detail}"
    return notes


_COMMENT_RE = re.compile(
    r"<!-- artbot:verify item=(\d+) version=([0-9A-Za-z.+!-]+) status=([a-z-]+) -->"
)


@dataclass(frozen=True)
class VerifyMarker:
    """The hidden line that makes a verification comment recognisable."""

    item: int
    version: str
    status: CodeStatus

    def __str__(self) -> str:
        token = self.status.value.replace(" ", "-")
        return f"<!-- artbot:verify item={self.item} version={self.version} status={token} -->"

    @classmethod
    def find_all(cls, body: str | None) -> list[VerifyMarker]:
        found = []
        for m in _COMMENT_RE.finditer(body or ""):
            with contextlib.suppress(ValueError):
                status = CodeStatus(m.group(3).replace("-", " "))
                found.append(cls(int(m.group(1)), m.group(2), status))
        return found


_PHRASES = {
    CodeStatus.reproduced: "still reproduces",
    CodeStatus.fixed: "no longer reproduces",
    CodeStatus.could_not_run: "could not be checked",
}


def verification_comment(item: int, version: str, status: CodeStatus | str) -> str:
    """The comment stating one verification result, with its hidden marker."""
    status = CodeStatus(status)
    if not _VERSION_RE.match(version):
        raise BadInput(f"{version!r}: not a version number")
    marker = VerifyMarker(item, version, status)
    return (
        f"{marker}\n**artbot verify:** item {item} {_PHRASES[status]} in "
        f"{DISTRIBUTION} {version} (its reproduction, run against that release's own code).\n"
    )


def comments_to_post(
    existing_comment_bodies: Sequence[str], item: int, version: str, status: CodeStatus | str
) -> list[str]:
    """The comment to add for this result, or none.

    None when a comment already states this (item, version, status), when the latest
    verification comment for the item already states this status (nothing changed), or when
    the check could not run (that is about our environment, not the issue).
    ``existing_comment_bodies`` are in posting order, oldest first.
    """
    status = CodeStatus(status)
    if status is CodeStatus.could_not_run:
        return []
    markers = [
        m for body in existing_comment_bodies for m in VerifyMarker.find_all(body) if m.item == item
    ]
    if any(m.version == version and m.status is status for m in markers):
        return []
    if markers and markers[-1].status is status:
        return []
    return [verification_comment(item, version, status)]


# --------------------------------------------------------------------------- text tables


def anchor_table(catalog: Catalog, results: Sequence[AnchorResult], tree: ArtTree) -> str:
    """Per finding, one line per location: status, path:lines, and what was found."""
    out = [f"anchors against {tree.label}"]
    out += [f"note: {n}" for n in tree.notes]
    for finding in catalog.findings:
        rows = [r for r in results if r.item == finding.item]
        if not rows:
            continue
        out.append(f"item {finding.item}: {finding.title}")
        for r in rows:
            where = f"{r.path}:{_span(r.lines)}"
            if r.new_lines:
                where += f" -> {_span(r.new_lines)}"
            out.append(f"  {r.status.value:<13} {where:<52} {r.detail}")
    counts = {s: sum(r.status is s for r in results) for s in AnchorStatus}
    summary = ", ".join(f"{n} {s.value}" for s, n in counts.items() if n)
    out.append(f"{len(results)} locations: {summary}")
    return "\n".join(out)


def _span(lines: tuple[int, int]) -> str:
    return str(lines[0]) if lines[0] == lines[1] else f"{lines[0]}-{lines[1]}"


def code_table(results: Sequence[CodeResult], tree: ArtTree) -> str:
    """One block per item: status, the ART functions run, and the measured figure or the why."""
    out = [f"code against {tree.label}"]
    for r in results:
        out.append(f"item {r.item:>2}: {r.status.value}")
        if r.ran:
            out.append(f"  ran: {', '.join(r.ran)}")
        if r.scope:
            out.append(f"  scope: {r.scope}")
        out.append(f"  {r.detail}")
        if r.stand_ins:
            out.append(f"  stand-ins: {', '.join(r.stand_ins)}")
        if r.not_loaded:
            out.append(f"  named but not loaded: {len(r.not_loaded)} (package __init__ names)")
    return "\n".join(out)


def anchors_json(results: Sequence[AnchorResult], tree: ArtTree) -> dict[str, Any]:
    return {
        "source": tree.label,
        "notes": list(tree.notes),
        "ok": not any(r.status.failed for r in results),
        "locations": [r.as_json() for r in results],
    }


def code_json(results: Sequence[CodeResult], tree: ArtTree) -> dict[str, Any]:
    return {
        "source": tree.label,
        "ran": not any(r.status is CodeStatus.could_not_run for r in results),
        "results": [r.as_json() for r in results],
    }
