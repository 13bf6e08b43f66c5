"""ART's modules imported one file at a time, with stand-ins for a few remote-call packages.

ART's package ``__init__`` files import every backend, so they are replaced by empty synthetic
packages and only the files a checked function needs are executed.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

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


class NotLoadedError(RuntimeError):
    """A checked function used an ART name that only a package ``__init__`` defines."""


class Unloaded:
    """Placeholder for a name defined in a package ``__init__``, which is never executed:
    harmless where ART only names it; any use raises :class:`NotLoadedError` naming it."""

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
    ``__init__`` re-exports from them are loaded when first asked for. A name the ``__init__``
    re-exports wins over a submodule of the same name, as when the ``__init__`` runs
    (``art/utils``: ``from .retry import retry`` binds the function, not the module)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        resolve: Callable[[ModuleType, str], Any] = self.__dict__["_artbot_resolve"]
        return resolve(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        # The import system binds each loaded submodule on its package; an ``__init__`` that
        # re-exports a same-named function rebinds it after, so that binding is not kept.
        shadowed: Callable[[ModuleType, str], bool] | None = self.__dict__.get("_artbot_shadowed")
        if (
            isinstance(value, ModuleType)
            and value.__name__ == f"{self.__name__}.{name}"
            and shadowed is not None
            and shadowed(self, name)
        ):
            return
        super().__setattr__(name, value)


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
    """ART's modules from one ``art/`` folder, in ``sys.modules`` only while the context is open:
    ``import art.x.y`` loads the single file ``art/x/y.py``; every ART package is an empty
    synthetic module (no ``__init__.py`` runs). On exit what was there before is put back, so
    two releases never mix."""

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
        # The split (issue #53, repros/_domain.py): the inputs artbot drew per claim, and what
        # the check measured on them, which artbot judges again outside this process.
        self.plan: dict[str, list[Any]] = {}
        self.tape: dict[str, list[dict[str, Any]]] = {}

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

    def source(self, relpath: str) -> str:
        """Text of ``art/<relpath>`` ("" when absent), for checks that read rather than run."""
        file = self.package_dir / relpath
        return file.read_text(encoding="utf-8") if file.is_file() else ""

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
        module.__dict__["_artbot_shadowed"] = self._shadowed
        return module

    def exec_module(self, module: ModuleType) -> None:
        return None

    # names of synthetic packages ----------------------------------------------------
    def _shadowed(self, package: ModuleType, name: str) -> bool:
        """The package ``__init__`` re-exports ``name`` from a module (module doc)."""
        assert package.__spec__ is not None
        exports = self._package_exports(package.__name__, package.__spec__.loader_state[1])
        return not isinstance(exports, str) and name in exports[0]

    def _resolve(self, package: ModuleType, name: str) -> Any:
        spec = package.__spec__
        assert spec is not None
        _, where = spec.loader_state
        is_module = (where / name).is_dir() or (where / f"{name}.py").is_file()
        if is_module and not self._shadowed(package, name):
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
