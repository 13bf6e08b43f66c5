"""The minimal repros (``repros/minimal/itemNN.py``) pasted into every issue artbot files.

Those that call ART's own code (items 7, 8, 10, 801, 1001: their first line names the release,
``# Python 3.12, CPU: pip install openpipe-art==V torch``) are run against that release by
tests/repros/test_art_blocks.py; this file holds the others, torch models of ART's lines, and
what every issue shows of either.

Each one, saved alone in an empty folder and run with ``python itemNN.py``, ends with the line
``verdict: reproduced``, and with ``verdict: fixed`` under ``ARTBOT_FIX=1`` (the audit's
suggested fix), so its verdict can fail. Each is short, imports only torch and the standard
library, names the ART code it models, and ``artbot render --item N`` pastes it verbatim under
Details, its output in view.

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
from artbot.repro.files import art_block_release
from tests.helpers.forkrun import ForkServer
from tests.helpers.shipped import ISSUE_ITEMS

pytestmark = pytest.mark.repro

REPO = Path(__file__).resolve().parents[2]
MINIMAL_DIR = REPO / "repros" / "minimal"
ALL_SCRIPTS = sorted(MINIMAL_DIR.glob("*.py"))
# The torch models of ART's lines (a block that calls ART is run on its release elsewhere).
SCRIPTS = [s for s in ALL_SCRIPTS if art_block_release(s.read_text(encoding="utf-8")) is None]
FIX_ENV = "ARTBOT_FIX"
MAX_LINES = 60
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
    names = {script.name for script in ALL_SCRIPTS}
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
    above the script); ARTBOT_WRITE_OUTPUTS=1 writes it from this run (the blocks that call ART
    keep theirs, under ``art``)."""
    import json

    import torch

    fresh = {
        "torch": torch.__version__,
        "outputs": {script.name: runs[(script.name, False)].stdout for script in SCRIPTS},
    }
    if os.environ.get("ARTBOT_WRITE_OUTPUTS") == "1":
        data = {**json.loads(OUTPUTS.read_text(encoding="utf-8")), **fresh}
        OUTPUTS.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    recorded = json.loads(OUTPUTS.read_text(encoding="utf-8"))
    assert {k: recorded.get(k) for k in fresh} == fresh


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
    """Every issue shows its minimal repro as a python block: one that calls ART in view, with
    the output its release gave; a torch model's output in view, the code under Details."""
    import json

    result = CliRunner().invoke(cli, ["--root", str(REPO), "render", "--item", str(item)])
    assert result.exit_code == 0, result.output
    body = result.stdout
    name = f"item{item:02d}.py"
    script = (MINIMAL_DIR / name).read_text(encoding="utf-8").strip()
    recorded = json.loads(OUTPUTS.read_text(encoding="utf-8"))
    block = f"```python\n{script}\n```"
    assert body.count(block) == 1
    art = art_block_release(script)
    if art is None:
        output = recorded["outputs"][name].strip()
        assert body.index(f"```text\n{output}\n```") < body.index("<details>") < body.index(block)
        return
    release, install = art
    assert body.index(block) < body.index("<details>")
    assert f"printed on openpipe-art {release}" in body and script.startswith(
        f"# Python 3.12, CPU: {install}"
    )
    for output in recorded["art"]["runs"][name].values():
        assert body.index(f"```text\n{output.strip()}\n```") < body.index("<details>")


PYTHON_312 = Path.home() / ".pyenv" / "versions" / "3.12.1" / "bin" / "python"


@pytest.mark.skipif(not PYTHON_312.is_file(), reason="no Python 3.12 from pyenv here")
def test_every_script_compiles_on_python_3_12() -> None:
    """ART requires Python 3.12, the maintainer's interpreter: every minimal repro, a torch model
    or a block calling ART, compiles there (they run here on this interpreter)."""
    code = "import sys\nfor f in sys.argv[1:]: compile(open(f).read(), f, 'exec')"
    argv = [str(PYTHON_312), "-c", code, *map(str, ALL_SCRIPTS)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
