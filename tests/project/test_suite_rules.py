"""Rules the suite keeps about itself: one set of hypothesis settings; item numbers read from
the catalog; a tree that mirrors the stages (each folder of tests/ names a stage of artbot/,
or is repros/, project/ or one of the shared folders); and no test module imports another: what
tests share is a fixture in a conftest.py or a helper in tests/helpers/."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
SELF = Path(__file__).resolve()
# Every Python file of tests/ but this one (whose text names what the rules look for).
MODULES = sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts and p != SELF)
# Folders of tests/ that are not a stage of artbot/: the tests of the repro scripts (repros/),
# of the project as a whole (project/ and the action's workflows), the shared helpers, and data.
NOT_STAGES = {"repros", "project", "helpers", "golden", "fixtures"}


def rel(path: Path) -> str:
    return path.relative_to(TESTS).as_posix()


def stages() -> set[str]:
    """artbot's stages: its subpackages and its top-level modules."""
    package = REPO / "artbot"
    found = {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    return found | {p.stem for p in package.glob("*.py") if not p.stem.startswith("_")}


@pytest.mark.parametrize("path", MODULES, ids=rel)
def test_property_tests_use_the_profile_settings_only(path: Path) -> None:
    """Hypothesis settings live in conftest.py's profiles, so every property test has the same
    (no deadline); a per-test ``@settings(...)`` would override them for one test."""
    if path.name == "conftest.py":
        return
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"^\s*@(hypothesis\.)?settings\(", text, re.MULTILINE), rel(path)
    assert not re.search(r"^\w+ = (hypothesis\.)?settings\(", text, re.MULTILINE), rel(path)


@pytest.mark.parametrize("path", MODULES, ids=rel)
def test_item_numbers_come_from_the_catalog(path: Path) -> None:
    """No hard-coded run of item numbers (``range(1, 12)``): tests read tests/helpers/shipped.py."""
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"range\((1|4), 1[12]\)", text), rel(path)


def imported(path: Path) -> list[str]:
    """Every module ``path`` imports from the ``tests`` package (function-level included), as
    dotted names; a relative import is named as written (``.x``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "tests"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                found.append("." * node.level + (node.module or ""))
            elif node.module and node.module.split(".")[0] == "tests":
                # `from tests.x import y` may import the module tests.x.y: name both
                found += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return found


def offending(path: Path) -> list[str]:
    """The imports of ``path`` from the tests package that are not tests.helpers or one of its
    modules: a test module, another folder's module, a conftest, a relative import."""
    bad = []
    for name in imported(path):
        parts = name.split(".")
        helper = parts[:2] == ["tests", "helpers"]
        if not helper or any(p.startswith("test_") or p == "conftest" for p in parts):
            bad.append(name)
    return bad


@pytest.mark.parametrize("path", MODULES, ids=rel)
def test_no_test_module_imports_another(path: Path) -> None:
    """Shared fixtures are in a conftest.py, shared helpers in tests/helpers/: an import from
    the tests package names tests.helpers (or one of its modules), never a test module."""
    bad = offending(path)
    assert bad == [], f"{rel(path)} imports {bad}: share through tests/helpers/ or a conftest.py"


def test_the_import_rule_catches_each_way_of_importing_a_test_module(tmp_path: Path) -> None:
    module = tmp_path / "test_x.py"
    module.write_text(
        "import tests.run.test_plan\n"
        "from tests.run.test_plan import ROOT\n"
        "from tests.run import test_plan\n"
        "from tests import conftest\n"
        "from . import test_y\n"
        "from tests.helpers.artrepo import artbot\n"
        "from tests.helpers import artrepo\n"
        "def f():\n"
        "    from tests.verify.test_confine import x\n",
        encoding="utf-8",
    )
    assert offending(module) == [
        "tests.run.test_plan",
        "tests.run.test_plan",
        "tests.run.test_plan.ROOT",
        "tests.run",
        "tests.run.test_plan",
        "tests",
        "tests.conftest",
        ".",
        "tests.verify.test_confine",
        "tests.verify.test_confine.x",
    ]


def test_each_folder_names_a_stage_of_artbot() -> None:
    """tests/<stage>/ for each stage of artbot/ (a subpackage, or a top-level module such as
    action.py), plus the folders that are not stages (NOT_STAGES)."""
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert sorted(folders - stages() - NOT_STAGES) == [], "name the artbot stage it tests"
    assert "run" in stages() and "action" in stages()


def test_test_modules_live_in_a_stage_folder_that_is_a_package() -> None:
    """No test module at the top of tests/ (only conftest.py and the `python -m tests.*`
    tools); every folder holding test modules is a package, since basenames repeat across
    stages (tests/tracking/test_subissues.py, tests/sandbox/test_subissues.py)."""
    top = sorted(p.name for p in TESTS.glob("test_*.py"))
    assert top == [], "move these into the folder of the stage they test"
    holders = {p.parent for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts}
    assert holders, "no test module found"
    missing = sorted(rel(d) for d in holders if not (d / "__init__.py").exists())
    assert missing == []
