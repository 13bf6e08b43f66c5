"""The import harness ART's regression tests run under, wherever artbot runs them: the
``conftest.py`` written beside a patched tree's test (:mod:`.regress`) and the one artbot's own
suite copies beside the exported tests (tests/fixtures/export/harness_conftest.py) both call
:func:`install`, so there is one harness. ``import art.x`` loads the single file ``art/x.py`` of
the tree in ``$ARTBOT_ART_PACKAGE`` with artbot's import isolation, as ``artbot verify`` does
(ART's dependencies are not installed where artbot runs).

ART needs Python 3.12; ``trainer_rank/_impl.py`` uses its ``type X = ...`` statements, which an
older interpreter cannot compile. There, ``art.trainer_rank._impl`` holds only the classes in
:data:`CUT` (item 6 builds its optimizer from ``AdamParams``: in 0.5.20 with the one
``TrainerRank`` method that does it, cut alone into a class of that name), each cut verbatim
from the release's file with its decorators and compiled at its own line numbers.
Every other ART module is imported whole (:mod:`artbot.verify.whole`, as the checks import
them): ``art.unsloth.train`` runs every statement of ``unsloth/train.py``, with Unsloth's
training stack (peft, trl, datasets, nest_asyncio, which it calls at import) stood in for where
not installed, so a fix through a same-file helper resolves as in ART's checkout (follow-up 401:
``_calculate_logprobs`` calling a helper of its file).
"""

from __future__ import annotations
import __future__

import importlib.util
import os
import sys
import types
from pathlib import Path

PACKAGE_VARIABLE = "ARTBOT_ART_PACKAGE"
SIBLINGS_VARIABLE = "ARTBOT_ART_SIBLINGS"
CONFTEST = "from artbot.patchtest.harness import install\n\ninstall()\n"

CUT: dict[str, tuple[str, ...]] = {
    "trainer_rank/_impl.py": (
        "AdamParams",
        "_DynamicOptimizer",
        "TrainerRankSlotStateError",
        # 0.5.20 builds its optimizer in a TrainerRank method (0.5.21+: trainer_rank/_optimizer.py)
        "TrainerRank._new_dynamic_optimizer",
    )
}


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


def method_source(text: str, owner: str, name: str) -> str:
    """The method ``name`` of the top-level class ``owner``, dedented to a top-level ``def`` at
    its own line numbers; raises StopIteration when the class defines none."""
    lines = text.splitlines()
    cls = next(
        i for i, line in enumerate(lines) if line.startswith((f"class {owner}(", f"class {owner}:"))
    )
    start = next(
        i
        for i in range(cls + 1, len(lines))
        if lines[i].startswith(f"    def {name}(")
        or (lines[i][:1].strip() and not lines[i].startswith(("#", ")")))
    )
    if not lines[start].startswith("    def "):
        raise StopIteration
    end = start + 1
    while end < len(lines) and (
        not lines[end].strip()
        or lines[end].startswith("        ")
        or lines[end].startswith("    )")
    ):
        end += 1
    body = [line[4:] for line in lines[start:end]]
    return "\n" * start + "\n".join(body) + "\n"


def _cut_modules(package: Path, cuts: dict[str, tuple[str, ...]]) -> None:
    for relpath, names in cuts.items():
        file = package / relpath
        if not file.is_file():
            continue
        dotted = ".".join([package.name, *Path(relpath).with_suffix("").parts])
        module = types.ModuleType(dotted)
        module.__file__ = str(file)
        # Item 4's test finds the file with importlib.util.find_spec, which reads this.
        module.__spec__ = importlib.util.spec_from_file_location(dotted, file)
        sys.modules[dotted] = module  # dataclass() looks its module up
        exec("from dataclasses import dataclass\nimport torch", module.__dict__)
        flags = __future__.annotations.compiler_flag  # as the file's own future import
        text = file.read_text(encoding="utf-8")
        for name in names:
            owner, _, method = name.rpartition(".")
            try:
                source = (
                    method_source(text, owner, method) if owner else top_level_source(text, name)
                )
            except StopIteration:  # not in this release (a method moved to another file)
                continue
            code = compile(source, str(file), "exec", flags=flags, dont_inherit=True)
            if not owner:
                exec(code, module.__dict__)
                continue
            exec(code, module.__dict__)  # the method's globals are the module's
            holder = module.__dict__.setdefault(owner, type(owner, (), {}))
            setattr(holder, method, module.__dict__.pop(method))


def install() -> None:
    """Make ``import art....`` load the tree in ``$ARTBOT_ART_PACKAGE`` (for this process)."""
    from ..verify.isolation import ArtModules
    from ..verify.tree import distribution_packages
    from ..verify.whole import Whole

    package = Path(os.environ[PACKAGE_VARIABLE])
    # The packages shipped beside art/ (0.5.21's art_inference, which preprocessing/ imports),
    # as artbot verify loads them: named by the caller (a confined run sees no dist-info), else
    # found beside the tree.
    named = os.environ.get(SIBLINGS_VARIABLE)
    siblings = (
        tuple(n for n in named.split(",") if n)
        if named is not None
        else distribution_packages(package, src_layout=package.parent.name == "src")
    )
    modules = ArtModules(package, siblings=siblings)
    modules.__enter__()
    sys.meta_path.insert(0, Whole(modules))  # ART's files whole, boundary packages stood in for
    if sys.version_info < (3, 12):
        _cut_modules(package, CUT)
