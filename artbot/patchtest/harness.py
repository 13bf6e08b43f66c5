"""The import harness a patched tree's regression test runs under (the ``conftest.py`` written
beside it imports :func:`install`): ``import art.x`` loads the single file ``art/x.py`` of the
tree in ``$ARTBOT_ART_PACKAGE`` with artbot's import isolation, as ``artbot verify`` does (ART's
dependencies are not installed where artbot runs).

The same harness as the one artbot's own suite copies beside the exported tests
(tests/fixtures/export/harness_conftest.py): ``trainer_rank/_impl.py`` needs Python 3.12's
``type X = ...``, so on an older interpreter ``art.trainer_rank._impl`` holds only the classes
in :data:`CUT` (item 6 reads ``AdamParams``); ``art.unsloth.train`` imports Unsloth's training
stack, so it always holds only :data:`CUT_ALWAYS`. Each is cut verbatim from the tree's file
and compiled at its own line numbers.
"""

from __future__ import annotations
import __future__

import importlib.util
import os
import sys
import types
from pathlib import Path

PACKAGE_VARIABLE = "ARTBOT_ART_PACKAGE"
CUT: dict[str, tuple[str, ...]] = {"trainer_rank/_impl.py": ("AdamParams",)}
CUT_ALWAYS: dict[str, tuple[str, ...]] = {"unsloth/train.py": ("_calculate_logprobs",)}
CONFTEST = "from artbot.patchtest.harness import install\n\ninstall()\n"


def top_level_source(text: str, name: str) -> str:
    """The top-level class or function ``name`` of ``text`` with its decorators, at its own
    line numbers (blank lines before it); raises StopIteration when the file has none."""
    lines = text.splitlines()
    heads = (f"class {name}", f"def {name}(")
    start = next(i for i, line in enumerate(lines) if line.startswith(heads))
    first = start
    while first > 0 and lines[first - 1].startswith("@"):
        first -= 1
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t#)]}"):
        end += 1
    return "\n" * first + "\n".join(lines[first:end]) + "\n"


def _cut_modules(package: Path, cuts: dict[str, tuple[str, ...]]) -> None:
    for relpath, names in cuts.items():
        file = package / relpath
        if not file.is_file():
            continue
        dotted = ".".join([package.name, *Path(relpath).with_suffix("").parts])
        module = types.ModuleType(dotted)
        module.__file__ = str(file)
        module.__spec__ = importlib.util.spec_from_file_location(dotted, file)
        sys.modules[dotted] = module  # dataclass() looks its module up
        exec("from dataclasses import dataclass\nimport torch", module.__dict__)
        flags = __future__.annotations.compiler_flag  # as the file's own future import
        text = file.read_text(encoding="utf-8")
        for name in names:
            source = top_level_source(text, name)
            code = compile(source, str(file), "exec", flags=flags, dont_inherit=True)
            exec(code, module.__dict__)


def install() -> None:
    """Make ``import art....`` load the tree in ``$ARTBOT_ART_PACKAGE`` (for this process)."""
    from ..verify.isolation import ArtModules

    package = Path(os.environ[PACKAGE_VARIABLE])
    modules = ArtModules(package)
    modules.__enter__()
    _cut_modules(package, CUT_ALWAYS)
    if sys.version_info < (3, 12):
        _cut_modules(package, CUT)
