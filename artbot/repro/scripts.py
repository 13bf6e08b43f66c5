"""Repro scripts as modules: the one place that knows the repro convention.

A repro is a script in ``repros/`` that imports helper modules from its own folder by bare
name (``_common``, ``_art_loss``, ...): the sibling files ``_*.py``. :func:`helper_imports`
finds those imports in a script's source (with :mod:`ast`, not a pattern over the text), and
:func:`import_script` imports a script by path with its siblings resolvable.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import threading
from pathlib import Path
from types import ModuleType

_PARSE_LOCK = threading.Lock()


def helper_imports(source: str) -> list[str]:
    """The sibling helper modules (``_name``) that ``source`` imports anywhere, in source order,
    once each (not relative imports nor ``_x.sub``; a script that does not parse: none)."""
    try:
        # CPython 3.11's ast.parse is not thread-safe ("AST constructor recursion depth
        # mismatch", python/cpython#106905); open and sync may render from several threads.
        with _PARSE_LOCK:
            tree = ast.parse(source)
    except SyntaxError:
        return []
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [(node.lineno, node.col_offset, n) for n in names if _is_helper(n)]
    out: list[str] = []
    for _, _, name in sorted(found):
        if name not in out:
            out.append(name)
    return out


def _is_helper(name: str) -> bool:
    return name.startswith("_") and "." not in name


def import_script(path: Path, name: str | None = None) -> ModuleType:
    """Import the script at ``path`` as module ``name`` (default: the file's stem), afresh, its
    folder on ``sys.path`` while it runs (its ``_*.py`` helpers resolve by bare name); it stays
    in ``sys.modules`` (a dataclass looks its module up while the class is built)."""
    path = Path(path)
    name = name or path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.parent)
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)
    return module
