"""The package's import arrows, read from the source (nothing is imported): every ``import``
of every module, function-level ones included, with relative names resolved; and a command
module named in :mod:`artbot.cli.lazy`'s table (``Lazy("artbot....", ...)``), which
``artbot.cli`` loads from there when the command is asked for, counts as imported by that table.

``artbot.verify`` checks findings against ART's code; what it uses (the catalog, the models,
the status records) sits below it, so nothing it imports may import it back.

Also the size rule, for every tracked ``.py`` file under artbot/, repros/ and tests/: no module
over 500 lines.
"""

from __future__ import annotations

import ast
import subprocess
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "artbot"
LINE_RULE_FOLDERS = ("artbot", "repros", "tests")
MAX_LINES = 500


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


@cache
def imports(name: str) -> frozenset[str]:
    """The artbot modules ``name`` imports (a package import counts as its ``__init__``)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Lazy":
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.add(first.value)
    return frozenset(m for m in found if m in MODULES and m != name)


def reachable(name: str) -> set[str]:
    seen: set[str] = set()
    todo = [name]
    while todo:
        for nxt in imports(todo.pop()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def inside_verify(name: str) -> bool:
    return name == "artbot.verify" or name.startswith("artbot.verify.")


def test_the_import_reader_sees_relative_and_function_level_imports() -> None:
    assert "artbot.verify.tree" in imports("artbot.verify.release")  # from .tree import ...
    assert "artbot.errors" in imports("artbot.verify.release")  # from ..errors import ...
    # inside a function: from ..verify.notes import ...
    assert "artbot.verify.notes" in imports("artbot.run.commands")
    assert "artbot.cli.lazy" in imports("artbot.cli")
    assert "artbot.verify.cli" in imports("artbot.cli.lazy")  # loaded when `verify` is asked for


def test_nothing_that_verify_imports_imports_verify_back() -> None:
    below = {m for v in MODULES if inside_verify(v) for m in imports(v) if not inside_verify(m)}
    assert below, "verify imports nothing outside itself?"
    arrows = {m: sorted(filter(inside_verify, reachable(m))) for m in sorted(below)}
    assert {m: up for m, up in arrows.items() if up} == {}


def python_files(root: Path = ROOT, folders: tuple[str, ...] = LINE_RULE_FOLDERS) -> list[str]:
    """The tracked ``.py`` files under ``folders`` (``git ls-files``), as paths from ``root``,
    but those deleted and not yet committed; outside a git checkout, every ``.py`` file there
    but caches and hidden folders."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--", *(f"{f}/*.py" for f in folders)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return sorted(p for p in listed.split("\0") if p and (root / p).is_file())
    except (OSError, subprocess.CalledProcessError):
        found = (p.relative_to(root) for f in folders for p in (root / f).rglob("*.py"))
        return sorted(
            p.as_posix()
            for p in found
            if not any(part.startswith(".") or part == "__pycache__" for part in p.parts)
        )


def test_the_line_rule_sees_every_folder() -> None:
    files = python_files()
    for folder in LINE_RULE_FOLDERS:
        assert any(f.startswith(f"{folder}/") for f in files), folder
    assert "tests/project/test_layers.py" in files and "repros/_common.py" in files


def test_no_module_is_over_500_lines() -> None:
    """The project's rule: no module over 500 lines (one concern per file), for the package,
    the repro scripts and their helpers, and the tests."""
    sizes = {f: len((ROOT / f).read_text(encoding="utf-8").splitlines()) for f in python_files()}
    over = {f: n for f, n in sizes.items() if n > MAX_LINES}
    listed = ", ".join(f"{f} ({n} lines)" for f, n in sorted(over.items()))
    assert not over, f"over {MAX_LINES} lines, split by concern: {listed}"


def test_one_place_decides_the_tracking_issue() -> None:
    """The flag-or-audit.yaml rule lives in ``Audit.tracking``: no module reads the audit's
    ``tracking_issue`` to decide it again."""
    readers = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Attribute) and node.attr == "tracking_issue"):
                continue
            owner = node.value
            if (isinstance(owner, ast.Attribute) and owner.attr == "audit") or (
                isinstance(owner, ast.Name) and owner.id in ("audit", "self")
            ):
                readers.append(f"{name}:{node.lineno}")
    assert [r for r in readers if not r.startswith("artbot.records.models:")] == [], readers


def test_planning_takes_no_repository() -> None:
    """The reads happen in the run's observe step; the functions that plan are given what was
    read, never the repository."""
    import inspect

    from artbot.run.blockwrite import merge
    from artbot.run.plan import plan_block, plan_run
    from artbot.run.status_comments import status_comment, verification_comments
    from artbot.run.subissue_writes import plan_step

    planners = (plan_run, plan_block, merge, plan_step, verification_comments, status_comment)
    for planner in planners:
        assert "repo" not in inspect.signature(planner).parameters, planner.__name__


# The stages, in the order a run goes through them: a package may import those after it,
# never one before it ("up a level").
STAGES = ("artbot.cli", "artbot.run", "artbot.github", "artbot.tracking", "artbot.report")


def stage(name: str) -> int | None:
    return next((k for k, s in enumerate(STAGES) if name == s or name.startswith(s + ".")), None)


def test_no_module_imports_a_stage_before_its_own() -> None:
    up = sorted(
        f"{m} -> {i}"
        for m in MODULES
        for i in imports(m)
        if stage(m) is not None and stage(i) is not None and stage(i) < stage(m)  # type: ignore[operator]
    )
    assert up == []


def test_no_import_cycle() -> None:
    """No module reaches itself through its imports (function-level ones included)."""
    assert sorted(m for m in MODULES if m in reachable(m)) == []


def test_the_top_of_the_package_holds_few_modules() -> None:
    top = sorted(
        p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py")
    )
    assert len(top) <= 12, top  # see docs/design.md: what is left at the top, and why
