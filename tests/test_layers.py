"""The package's import arrows, read from the source (nothing is imported): every ``import``
of every module, function-level ones included, with relative names resolved.

``artbot.verify`` checks findings against ART's code; what it uses (the catalog, the models,
the status records) sits below it, so nothing it imports may import it back.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "artbot"


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
    assert "artbot.verify" in imports("artbot.apply")  # inside a function: from .verify import
    assert "artbot.verify.cli" in imports("artbot.cli")


def test_nothing_that_verify_imports_imports_verify_back() -> None:
    below = {m for v in MODULES if inside_verify(v) for m in imports(v) if not inside_verify(m)}
    assert below, "verify imports nothing outside itself?"
    arrows = {m: sorted(filter(inside_verify, reachable(m))) for m in sorted(below)}
    assert {m: up for m, up in arrows.items() if up} == {}


def test_no_module_is_over_500_lines() -> None:
    sizes = {n: len(p.read_text(encoding="utf-8").splitlines()) for n, p in MODULES.items()}
    assert {n: s for n, s in sizes.items() if s > 500} == {}


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
    assert [r for r in readers if not r.startswith("artbot.models:")] == [], readers


def test_planning_takes_no_repository() -> None:
    """The reads happen before planning (observe, observe_sub_issues, observe_comments); the
    functions that plan are given what was read, never the repository."""
    import inspect

    from artbot.apply_status import verification_comments
    from artbot.apply_subissues import plan_step
    from artbot.plan import plan_open, plan_sync

    for planner in (plan_open, plan_sync, plan_step, verification_comments):
        assert "repo" not in inspect.signature(planner).parameters, planner.__name__
