"""The minimal repros (``repros/minimal/itemNN.py``) pasted into issues 4-11.

Each one, saved alone in an empty folder and run with ``python itemNN.py``, ends with the line
``verdict: reproduced``, and with ``verdict: fixed`` under ``ARTBOT_FIX=1`` (the audit's
suggested fix), so its verdict can fail. Each is short, imports only torch and the standard
library, names the ART code it models, and ``artbot render --item N`` pastes it verbatim under
Details where it is the issue's repro (the whole body at most 6 KB), else quotes its output.

Cost: importing torch takes about 1.2 s of CPU and the first torch.optim optimizer another
1.7 s (torch._dynamo), far more than any script's own work. So every run forks from one
interpreter that has imported both (tests/helpers/forkrun.py): each still runs as ``python
itemNN.py`` in its own process, its own empty folder and fresh globals, so only the imports are
shared (tests/project/test_forkrun.py shows a forked run prints what a fresh interpreter prints).
All of it runs in one module fixture.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.records.catalog import load_catalog
from tests.helpers.forkrun import ForkServer
from tests.helpers.shipped import ISSUE_ITEMS

pytestmark = pytest.mark.repro

REPO = Path(__file__).resolve().parents[2]
MINIMAL_DIR = REPO / "repros" / "minimal"
SCRIPTS = sorted(MINIMAL_DIR.glob("*.py"))
FIX_ENV = "ARTBOT_FIX"
MAX_LINES = 60
MAX_RENDERED = 6 * 1024  # bytes: #38's limit for a whole issue
RUN_TIMEOUT_S = 180


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (FIX_ENV, "PYTHONPATH")}
    env["OMP_NUM_THREADS"] = "1"  # the runs share the machine
    return env


def _folder(script: Path, base: Path, fix: bool) -> Path:
    """An empty folder holding only ``script``."""
    folder = base / f"{script.stem}-{'fixed' if fix else 'as-is'}" / "run"
    folder.mkdir(parents=True)
    shutil.copy(script, folder / script.name)
    return folder


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[tuple[str, bool], subprocess.CompletedProcess[str]]:
    """Every script, as it is and with the fix switch, each in its own empty folder."""
    base = tmp_path_factory.mktemp("minimal")
    server = ForkServer(_env(), preload=("torch", "torch._dynamo"))
    out = {}
    try:
        for script in SCRIPTS:
            for fix in (False, True):
                env = {**_env(), **({FIX_ENV: "1"} if fix else {})}
                folder = _folder(script, base, fix)
                argv = [sys.executable, script.name]
                out[(script.name, fix)] = server.spawn(argv, folder, env, RUN_TIMEOUT_S)
    finally:
        server.close()
    return out


def test_every_open_item_has_a_minimal_repro() -> None:
    names = {script.name for script in SCRIPTS}
    assert {f"item{item:02d}.py" for item in ISSUE_ITEMS} <= names


@pytest.mark.parametrize("fix", [False, True], ids=["as-is", "fixed"])
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_verdict(
    runs: dict[tuple[str, bool], subprocess.CompletedProcess[str]], script: Path, fix: bool
) -> None:
    done = runs[(script.name, fix)]
    context = f"{script.name} ({FIX_ENV}={int(fix)}):\n{done.stdout}\n{done.stderr}"
    assert done.returncode == 0, context
    lines = done.stdout.splitlines()
    assert lines[-1] == f"verdict: {'fixed' if fix else 'reproduced'}", context
    assert sum(line.startswith("verdict:") for line in lines) == 1, context
    # Two or three short lines of measurement before the verdict.
    assert 2 <= len(lines) - 1 <= 3, context
    assert all(len(line) <= 120 for line in lines), context


OUTPUTS = MINIMAL_DIR / "outputs.json"


def test_the_captured_outputs_are_what_each_script_prints(
    runs: dict[tuple[str, bool], subprocess.CompletedProcess[str]],
) -> None:
    """repros/minimal/outputs.json holds each script's output as it is (the issue quotes it
    under the script); ARTBOT_WRITE_OUTPUTS=1 writes it from this run."""
    import json

    import torch

    fresh = {
        "torch": torch.__version__,
        "outputs": {script.name: runs[(script.name, False)].stdout for script in SCRIPTS},
    }
    if os.environ.get("ARTBOT_WRITE_OUTPUTS") == "1":
        OUTPUTS.write_text(json.dumps(fresh, indent=2) + "\n", encoding="utf-8")
    assert json.loads(OUTPUTS.read_text(encoding="utf-8")) == fresh


def _imported_roots(tree: ast.Module) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative import"
            roots.add(str(node.module).split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__":
            raise AssertionError("__import__ call")
    return roots


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_short_and_self_contained(script: Path) -> None:
    source = script.read_text(encoding="utf-8")
    assert len(source.splitlines()) <= MAX_LINES
    tree = ast.parse(source)
    extra = _imported_roots(tree) - {"torch"} - set(sys.stdlib_module_names)
    assert not extra, f"imports beyond torch and the standard library: {sorted(extra)}"
    assert source.count(f'os.environ.get("{FIX_ENV}") == "1"') == 1  # the one fix switch


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_docstring_names_the_art_code(script: Path) -> None:
    catalog = load_catalog(REPO)
    docstring = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
    finding = catalog.get(int(script.stem.removeprefix("item")))
    # An audit item names the audit's commit; artbot's follow-up the release it was found in.
    seen_at = f"openpipe-art {finding.checked_release}" if finding.is_follow_up else None
    assert (seen_at or catalog.audit.commit) in docstring
    loc = finding.locations[0]
    lines = f"#L{loc.start}" if loc.start == loc.end else f"#L{loc.start}-L{loc.end}"
    assert f"{loc.path.removeprefix('src/art/')}{lines}" in docstring


@pytest.mark.parametrize("item", ISSUE_ITEMS)
def test_rendered_issue_carries_it(item: int) -> None:
    """The script itself where it is the issue's repro; where ART's own function imports on a
    CPU the regression test is the repro, and the script's output is quoted under Details."""
    import json

    result = CliRunner().invoke(cli, ["--root", str(REPO), "render", "--item", str(item)])
    assert result.exit_code == 0, result.output
    assert len(result.stdout.encode()) <= MAX_RENDERED
    name = f"item{item:02d}.py"
    script = (MINIMAL_DIR / name).read_text(encoding="utf-8")
    output = json.loads(OUTPUTS.read_text(encoding="utf-8"))["outputs"][name].strip()
    named = f"`repros/minimal/{name}` in artbot's repository"
    if f"`python {name}` (torch only" in result.output and named in result.output:
        # Past the whole-body budget the code is named, not pasted; its output is in view.
        assert f"```text\n{output}\n```" in result.output
        assert f"```python\n{script.strip()}\n```" not in result.output
    elif f"`python {name}` (torch only" in result.output:
        assert f"```python\n{script.strip()}\n```" in result.output
    else:
        assert f"```text\n{output}\n```" in result.output
