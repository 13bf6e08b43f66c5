"""ART's modules imported whole, with stand-ins only for the third-party packages they import.

``megatron/lora.py`` and ``trainer_rank/_impl.py`` import Megatron-Core, Megatron-Bridge and
Transformer Engine at module level, and ``_impl.py`` (with the modules it imports) uses Python
3.12's ``type X = ...`` statement; ``unsloth/train.py`` imports Unsloth's training stack;
``tinker/service.py`` imports the Tinker server (fastapi, uvicorn, the Tinker cookbook's
renderers) and ``mp_actors`` (nest_asyncio, setproctitle, tblib). :func:`whole` opens a context,
inside the one the check is given (``artbot/verify/isolation.py``'s ``ArtModules``), in which:

- every ART module is imported as a module, every top-level statement run in file order under
  its own file name: a helper, an alias, a module-level table or a loop of the file resolves as
  in ART. On a Python older than 3.12, where a file does not parse, its ``type X = ...``
  statements (and nothing else) run as ``X = ...``, the same value without the lazy alias;
- the boundary packages, when not installed (:data:`BOUNDARY_PACKAGES`), are stand-in modules.
  Any name taken from one is a stand-in class: it can be subclassed, called (an instance that
  holds nothing) and given class-level calls at import time (Megatron-Bridge's registration,
  ``nest_asyncio.apply()``, ``pickling_support.install()``), each recorded in
  :attr:`Whole.used`. Megatron's ``parallel_state`` is one process: world sizes 1, ranks 0, no
  groups. Nothing of ART's own code is replaced.

Each check says which stand-ins it used (:meth:`Whole.said`). The regression tests' import
harness (``artbot/patchtest/harness.py``) loads ART's files the same way, and
``repros/_art_whole.py`` hands this module to the repros' checks.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import re
import sys
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

# Third-party packages ART's GPU paths import, that need a GPU or are not installed here
# (each stood in for only where it is not installed).
GPU_PACKAGES = (
    "megatron",
    "transformer_engine",
    "quack",
    "cutlass",
    "cuda",
    "triton",
    "flash_attn",
    "apex",
    "unsloth",
    "unsloth_zoo",
    "vllm",
    # Unsloth's training stack, which unsloth/train.py imports (and calls: nest_asyncio.apply())
    "datasets",
    "nest_asyncio",
    "peft",
    "trl",
)
# Third-party packages of ART's service paths that its code imports and calls at import time but
# that no checked function runs (Tinker's server and ART's process actors; LocalBackend's progress
# bar, tqdm, and model.py's data frames, polars, which only its training loop and logging use).
SERVICE_PACKAGES = (
    "fastapi",
    "uvicorn",
    "setproctitle",
    "tblib",
    "tinker_cookbook",
    "tqdm",
    "polars",
)
BOUNDARY_PACKAGES = GPU_PACKAGES + SERVICE_PACKAGES
_PARALLEL_STATE = "megatron.core.parallel_state"
_TYPE_ALIAS = re.compile(r"(?m)^(\s*)type (\w+)(\[[^\]=]*\])? = ")


def type_statements_as_assignments(source: str) -> str:
    """``source`` with each ``type X = ...`` statement (Python 3.12) read as ``X = ...``, so that
    a Python before 3.12 compiles ART's modules; the one place for that reading."""
    return _TYPE_ALIAS.sub(r"\1\2 = ", source)


class _StandInMeta(type):
    """A stand-in class answers any class-level attribute with a recorded no-op call."""

    used: list[str]

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        qualname = f"{cls.__module__}.{cls.__qualname__}.{name}"

        def call(*args: Any, **kwargs: Any) -> None:
            cls.used.append(qualname)

        return call


class _StandInModule(types.ModuleType):
    """A module of a GPU package: each name asked for is a new stand-in class."""

    used: list[str]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if f"{self.__name__}.{name}" == _PARALLEL_STATE:  # ``from megatron.core import ...``
            return importlib.import_module(_PARALLEL_STATE)
        self.used.append(f"{self.__name__}.{name}")

        def init(obj: Any, *args: Any, **kwargs: Any) -> None:
            return None

        made = _StandInMeta(name, (), {"__module__": self.__name__, "__init__": init})
        made.used = self.used
        setattr(self, name, made)
        return made


class _OneProcess(types.ModuleType):
    """Megatron's ``parallel_state`` for one process: sizes 1, ranks 0, no groups."""

    used: list[str]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        self.used.append(f"{self.__name__}.{name}")
        value: Any = 1 if name.endswith("world_size") else 0 if name.endswith("rank") else None
        if name.startswith(("is_", "model_parallel_is_")):
            value = False

        def answer(*args: Any, **kwargs: Any) -> Any:
            return value

        return answer


class Whole(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The finder of :func:`whole`: boundary stand-ins, and ART's files that need the 3.12 shim."""

    def __init__(self, art: Any) -> None:
        self.art = art
        self.used: list[str] = []
        self.shimmed: set[str] = set()
        self.real = {
            top for top in BOUNDARY_PACKAGES if importlib.machinery.PathFinder.find_spec(top)
        }

    def load(self, relpath: str) -> types.ModuleType:
        """Import ``art/<relpath>`` whole (e.g. ``megatron/lora.py``)."""
        dotted = ".".join([self.art.name, *Path(relpath).with_suffix("").parts])
        return importlib.import_module(dotted)

    def said(self) -> list[str]:
        """The stand-ins the run used, and the files run with the 3.12 shim, for its scope."""
        tops = sorted({name.split(".")[0] for name in self.used})
        out = [f"{top} (stand-in, not importable here)" for top in tops if top != "megatron"]
        if any(n.startswith(_PARALLEL_STATE) for n in self.used):
            out.append("Megatron parallel_state (one process)")
        if any(n.startswith("megatron") and not n.startswith(_PARALLEL_STATE) for n in self.used):
            out.append("Megatron's other names (stand-in classes)")
        out += [
            f"{f} (type statements run as assignments on this Python)" for f in sorted(self.shimmed)
        ]
        return out

    # finder -----------------------------------------------------------------------------
    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        top = fullname.split(".")[0]
        if top in BOUNDARY_PACKAGES and top not in self.real:
            spec = importlib.machinery.ModuleSpec(fullname, self, is_package=True)
            spec.loader_state = "stand-in"
            return spec
        if top != self.art.name:
            return None
        spec = self.art.find_spec(fullname, path, target)
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            return spec
        source = Path(spec.origin).read_text(encoding="utf-8")
        try:
            ast.parse(source)
        except SyntaxError:
            spec.loader = self
            spec.loader_state = source
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        if spec.loader_state != "stand-in":
            return None
        module: Any = (_OneProcess if spec.name == _PARALLEL_STATE else _StandInModule)(spec.name)
        module.__path__ = []
        module.used = self.used
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        spec = module.__spec__
        assert spec is not None
        if spec.loader_state == "stand-in":
            return
        source = type_statements_as_assignments(spec.loader_state)
        assert spec.origin is not None
        self.shimmed.add(str(Path(spec.origin).relative_to(self.art.package_dir.parent)))
        exec(compile(source, spec.origin, "exec"), module.__dict__)


@contextlib.contextmanager
def whole(art: Any) -> Iterator[Whole]:
    """Inside ``art``'s context: ART's modules imported whole, boundary packages stood in for."""
    finder = Whole(art)
    sys.meta_path.insert(0, finder)
    try:
        yield finder
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)
        for key in list(sys.modules):
            top = key.split(".")[0]
            if (top in BOUNDARY_PACKAGES and top not in finder.real) or top == art.name:
                del sys.modules[key]
