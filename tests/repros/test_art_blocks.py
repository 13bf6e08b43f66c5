"""The minimal repros that call ART's own code (``repros/minimal/itemNN.py`` whose first line is
``# Python 3.12, CPU: pip install openpipe-art==V torch``): the block an issue shows in view.

Each is run as a maintainer runs it: saved alone in an empty folder, ``python itemNN.py``,
unmodified, against the files of the release its first line names (the checked wheel, through
tests/helpers/wheels.py). ART's dependencies are not installed here, so ``import art.x`` loads
the single file ``art/x.py`` through the harness the regression tests run under
(:mod:`artbot.patchtest.harness`), installed by a ``sitecustomize.py`` in a folder of its own on
``PYTHONPATH``: the block's own folder holds the block and nothing else. Its output must be the
one ``repros/minimal/outputs.json`` records (the issue quotes it), ending ``verdict:
reproduced``; and the verdict must flip where ART is fixed: on the newest release for an item
fixed since (7, 8, 10), on a copy of it with artbot's suggested fix (repros/controls/) for one
still open (801, 1001), so a block that prints a figure of its own cannot pass. Where pyenv has
a Python 3.12, each block must also compile there (ART requires 3.12).

Cost: one interpreter per tree, which has imported torch and installed the harness; each run
forks from it (tests/helpers/forkrun.py).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from artbot.repro.files import art_block_release
from artbot.settings import TOKEN_VARIABLES
from tests.helpers.controls import controlled_copy, load_control
from tests.helpers.forkrun import ForkServer
from tests.helpers.wheels import default_wheels

pytestmark = [pytest.mark.network, pytest.mark.repro]

REPO = Path(__file__).resolve().parents[2]
MINIMAL_DIR = REPO / "repros" / "minimal"
OUTPUTS = MINIMAL_DIR / "outputs.json"
NEWEST = "0.5.23"
BLOCKS = {
    path.name: release
    for path in sorted(MINIMAL_DIR.glob("item*.py"))
    if (release := art_block_release(path.read_text(encoding="utf-8"))) is not None
}
SITECUSTOMIZE = "from artbot.patchtest.harness import install\n\ninstall()\n"
RUN_TIMEOUT_S = 120
MAX_LINES = 20  # a bug report's length, blank lines not counted


def _env(package: Path, site: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in TOKEN_VARIABLES}
    env |= {
        "PYTHONPATH": str(site),
        "ARTBOT_ART_PACKAGE": str(package),
        "OMP_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return env


def _trees(base: Path) -> dict[str, Path]:
    """tree label -> its ``art/`` package: every release a block names, the newest, and the
    newest with each open block's item fixed (artbot's control)."""
    wheels = default_wheels()
    trees = {v: wheels.package(v) for v in {*(r for r, _ in BLOCKS.values()), NEWEST}}
    for name, (release, _) in BLOCKS.items():
        if release == NEWEST:
            control = load_control(_item(name))
            assert control is not None, f"{name}: no control to fix it with"
            edits = control.edits("fix", NEWEST)
            dest = base / f"fixed-{_item(name)}"
            trees[f"fixed-{name}"] = controlled_copy(trees[NEWEST].parent, dest, edits) / "art"
    return trees


def _item(name: str) -> int:
    return int(name.removeprefix("item").removesuffix(".py"))


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[tuple[str, str], subprocess.CompletedProcess[str]]]:
    """(block, tree label) -> its run, each in an empty folder of its own."""
    base = tmp_path_factory.mktemp("art-blocks")
    site = base / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    trees = _trees(base)
    out: dict[tuple[str, str], subprocess.CompletedProcess[str]] = {}
    for label, package in sorted(trees.items()):
        names = [
            n for n, (release, _) in BLOCKS.items() if label in (release, NEWEST, f"fixed-{n}")
        ]
        server = ForkServer(_env(package, site), preload=("torch",))
        try:
            for name in names:
                folder = base / label / name.removesuffix(".py")
                folder.mkdir(parents=True)
                shutil.copy(MINIMAL_DIR / name, folder / name)
                argv = [sys.executable, name]
                out[(name, label)] = server.spawn(argv, folder, _env(package, site), RUN_TIMEOUT_S)
        finally:
            server.close()
    yield out


def test_the_five_items_whose_code_runs_on_a_cpu_call_it() -> None:
    assert {_item(n) for n in BLOCKS} >= {7, 8, 10, 801, 1001}


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_a_block_is_short_and_calls_art(name: str) -> None:
    source = (MINIMAL_DIR / name).read_text(encoding="utf-8")
    assert len([line for line in source.splitlines() if line.strip()]) <= MAX_LINES
    tree = ast.parse(source)
    roots = {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    }
    roots |= {
        a.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for a in node.names
    }
    assert "art" in roots and not roots - {"art", "torch"} - set(sys.stdlib_module_names)
    assert "ARTBOT" not in source and "artbot" not in source.lower()


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_a_block_reproduces_on_the_release_it_names(
    runs: dict[tuple[str, str], subprocess.CompletedProcess[str]], name: str
) -> None:
    release, _ = BLOCKS[name]
    done = runs[(name, release)]
    context = f"{name} on {release}:\n{done.stdout}\n{done.stderr}"
    assert done.returncode == 0, context
    assert done.stdout.splitlines()[-1] == "verdict: reproduced", context
    # What the issue quotes is this output: test_the_recorded_outputs_are_written_from_this_run.


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_the_verdict_flips_where_art_is_fixed(
    runs: dict[tuple[str, str], subprocess.CompletedProcess[str]], name: str
) -> None:
    release, _ = BLOCKS[name]
    label = NEWEST if release != NEWEST else f"fixed-{name}"
    done = runs[(name, label)]
    context = f"{name} on {label}:\n{done.stdout}\n{done.stderr}"
    assert done.returncode == 0, context
    assert done.stdout.splitlines()[-1] == "verdict: fixed", context


def test_the_recorded_outputs_are_written_from_this_run(
    runs: dict[tuple[str, str], subprocess.CompletedProcess[str]],
) -> None:
    """``ARTBOT_WRITE_OUTPUTS=1`` records each block's output on its release and on the newest
    (where that differs), with the Python and torch they ran on, in repros/minimal/outputs.json
    under ``art``, beside the modelled scripts' outputs."""
    import platform

    import torch

    fresh = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "runs": {
            name: {
                label: runs[(name, label)].stdout
                for label in (release, NEWEST)
                if (name, label) in runs
            }
            for name, (release, _) in BLOCKS.items()
        },
    }
    if os.environ.get("ARTBOT_WRITE_OUTPUTS") == "1":
        data = json.loads(OUTPUTS.read_text(encoding="utf-8"))
        data["art"] = fresh
        OUTPUTS.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    assert json.loads(OUTPUTS.read_text(encoding="utf-8")).get("art") == fresh
