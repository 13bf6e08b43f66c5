"""The minimal repros (``repros/minimal/itemNN.py``) pasted into issues 4-11.

Each one, saved alone in an empty folder and run with ``python itemNN.py``, ends with the line
``verdict: reproduced``, and with ``verdict: fixed`` under ``ARTBOT_FIX=1`` (the audit's
suggested fix), so its verdict can fail. Each is short, imports only torch and the standard
library, names the ART code it models, and ``artbot render --item N`` pastes it verbatim in a
body a maintainer can read (at most 12,000 characters).

Cost: importing torch takes about 2.3 s of CPU and the first torch.optim optimizer another 1.7 s
(torch._dynamo), far more than any script's own work. So the plain runs are what a maintainer
does, a fresh ``python itemNN.py`` each, and the ``ARTBOT_FIX=1`` runs fork from one interpreter
that has imported torch already: each still runs in its own process and its own empty folder with
fresh globals, so only the import is shared. All of it runs in one module fixture, a few at a time.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.catalog import load_catalog
from artbot.cli import cli
from tests.shipped import ISSUE_ITEMS

pytestmark = pytest.mark.repro

REPO = Path(__file__).resolve().parents[1]
MINIMAL_DIR = REPO / "repros" / "minimal"
SCRIPTS = sorted(MINIMAL_DIR.glob("*.py"))
FIX_ENV = "ARTBOT_FIX"
MAX_LINES = 60
MAX_RENDERED = 12_000
RUN_TIMEOUT_S = 180
PARALLEL_RUNS = min(4, os.cpu_count() or 2)

# argv: FIX_ENV, then (folder, script name, output prefix) per run. Each run is a forked child:
# cwd = its folder (holding only the script), FIX_ENV=1, stdout and stderr to prefix.out/.err.
FORK_RUNNER = """
import json, os, runpy, sys, traceback
import torch, torch._dynamo  # shared by every child; the scripts import torch themselves too

codes = []
for folder, name, prefix in zip(*[iter(sys.argv[2:])] * 3):
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.chdir(folder)
            os.environ[sys.argv[1]] = "1"
            for fd, suffix in ((1, ".out"), (2, ".err")):
                os.dup2(os.open(prefix + suffix, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
            sys.argv, sys.path[0] = [name], folder
            runpy.run_path(name, run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
print(json.dumps(codes))
"""


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


def _run(script: Path, base: Path) -> subprocess.CompletedProcess[str]:
    """``python itemNN.py`` with the script alone in an empty folder, as a maintainer runs it."""
    return subprocess.run(
        [sys.executable, script.name],
        cwd=_folder(script, base, fix=False),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )


def _run_fixed(scripts: list[Path], base: Path) -> list[subprocess.CompletedProcess[str]]:
    """Every script with ``FIX_ENV=1``, each forked from one interpreter (see the docstring)."""
    argv = []
    for script in scripts:
        folder = _folder(script, base, fix=True)
        argv += [str(folder), script.name, str(folder.parent / "output")]
    runner = subprocess.run(
        [sys.executable, "-c", FORK_RUNNER, FIX_ENV, *argv],
        cwd=base,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=True,
    )
    codes = json.loads(runner.stdout)
    done = []
    for script, code in zip(scripts, codes, strict=True):
        output = base / f"{script.stem}-fixed" / "output"
        out, err = (Path(f"{output}{s}").read_text(encoding="utf-8") for s in (".out", ".err"))
        done.append(subprocess.CompletedProcess([script.name], code, out, err))
    return done


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[tuple[str, bool], subprocess.CompletedProcess[str]]:
    """Every script, as it is and with the fix switch, each in its own empty folder."""
    base = tmp_path_factory.mktemp("minimal")
    with ThreadPoolExecutor(max_workers=PARALLEL_RUNS) as pool:
        fixed = pool.submit(_run_fixed, SCRIPTS, base)
        plain = {script.name: pool.submit(_run, script, base) for script in SCRIPTS}
        out = {(name, False): future.result() for name, future in plain.items()}
        out.update({(s.name, True): done for s, done in zip(SCRIPTS, fixed.result(), strict=True)})
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
    assert catalog.audit.commit in docstring
    loc = catalog.get(int(script.stem.removeprefix("item"))).locations[0]
    lines = f"#L{loc.start}" if loc.start == loc.end else f"#L{loc.start}-L{loc.end}"
    assert f"{loc.path.removeprefix('src/art/')}{lines}" in docstring


@pytest.mark.parametrize("item", ISSUE_ITEMS)
def test_rendered_issue_carries_it(item: int) -> None:
    result = CliRunner().invoke(cli, ["--root", str(REPO), "render", "--item", str(item)])
    assert result.exit_code == 0, result.output
    assert len(result.output) <= MAX_RENDERED
    script = (MINIMAL_DIR / f"item{item:02d}.py").read_text(encoding="utf-8")
    assert f"```python\n{script.strip()}\n```" in result.output
