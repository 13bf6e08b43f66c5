"""Rules the suite keeps about itself: one set of hypothesis settings (a lint rule: ruff's
banned-api, configured in pyproject.toml); item numbers read from the catalog; a tree that
mirrors the stages (each folder of tests/ names a stage of artbot/, or is repros/, project/ or
one of the shared folders); no test module imports another: what tests share is a fixture in a
conftest.py or a helper in tests/helpers/; and the tiers: ``make test`` runs a slice of the
slow ones that keeps every checked item (tests/helpers/tiers.py), ``make test-all`` and CI all
of it."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from tests.helpers.tiers import KERNEL, NEWEST, adversarial_slice, in_slice

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


def test_per_test_hypothesis_settings_fail_the_lint(tmp_path: Path) -> None:
    """Hypothesis settings live in conftest.py's profiles (no deadline for any property test):
    ruff refuses ``@settings(...)`` anywhere else (banned-api, pyproject.toml)."""
    module = tmp_path / "test_probe.py"
    module.write_text("from hypothesis import settings\n\nS = settings(deadline=1)\n", "utf-8")
    config = str(REPO / "pyproject.toml")
    ruff = [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", config, str(module)]
    proc = subprocess.run(ruff, cwd=REPO, capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "TID251 `hypothesis.settings` is banned" in proc.stdout


def test_item_numbers_come_from_the_catalog() -> None:
    """No hard-coded run of item numbers (``range(1, 12)``): tests read tests/helpers/shipped.py."""
    found = [rel(p) for p in MODULES if re.search(r"range\((1|4), 1[12]\)", p.read_text("utf-8"))]
    assert found == []


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


def test_no_test_module_imports_another() -> None:
    """Shared fixtures are in a conftest.py, shared helpers in tests/helpers/: an import from
    the tests package names tests.helpers (or one of its modules), never a test module."""
    bad = {rel(p): found for p in MODULES if (found := offending(p))}
    assert bad == {}, "share through tests/helpers/ or a conftest.py"


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


def test_make_test_keeps_every_checked_item_in_the_slice() -> None:
    """The slice of the slow tiers keeps, for every item the controls check, one fake and one
    real fix (each on the newest release it names), the newest release and the default
    kernel; it drops the older releases and the other kernel."""
    from artbot.records.catalog import load_catalog
    from artbot.verify.code import checkable

    items = {f.item for f in checkable(load_catalog(REPO))}
    chosen = adversarial_slice()
    assert {item for item, kind in chosen if kind == "fake"} >= items
    assert {item for item, kind in chosen if kind == "real"} >= items
    for stem, version in chosen.values():
        path = REPO / "repros" / "controls" / "adversarial" / f"{stem}.toml"
        assert in_slice({"path": path, "version": version})
        assert not in_slice({"path": path, "version": "0.5.19"})
    assert in_slice({"version": NEWEST, "kernel": KERNEL, "item": 4})
    assert not in_slice({"version": "0.5.20"}) and not in_slice({"kernel": "avx512"})


def test_ci_runs_every_tier_and_make_test_its_slice() -> None:
    """CI calls the test command the README names as the one that runs every tier; the
    README's first command is the slice, run before pushing."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = {
        name: body.split("\n\n")[0]
        for name, body in re.findall(
            r"^(test|test-all): lint\n(.*?)(?=^\S|\Z)", makefile, re.M | re.S
        )
    }
    assert "--slice" in recipe["test"] and "--slice" not in recipe["test-all"]
    assert (REPO / ".ci" / "run").read_text(encoding="utf-8").rstrip().endswith("make test-all")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "`make test-all` runs every tier" in readme and "what CI runs (`.ci/run`)" in readme


def test_only_a_slow_tiers_test_is_left_to_make_test_all() -> None:
    """``full`` (leave it to make test-all) marks a test of a slow tier only: the fast and
    end-to-end tiers run whole in make test."""
    marked = [p for p in MODULES if "mark.full" in p.read_text(encoding="utf-8")]
    assert marked, "no test is marked full: update tests/helpers/tiers.py"
    for path in marked:
        text = path.read_text(encoding="utf-8")
        assert re.search(r"pytestmark = pytest\.mark\.(repro|network)", text), rel(path)
