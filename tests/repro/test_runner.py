"""The repro runner: captured output with provenance; timeouts and crashes never become evidence."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.records.catalog import load_catalog
from artbot.repro.run import load_result, run_repro, save_result
from tests.helpers.golden import render_issue

REPO = Path(__file__).resolve().parents[2]
MINI = Path(__file__).resolve().parents[1] / "fixtures" / "mini"


@pytest.fixture
def mini(tmp_path: Path) -> Path:
    root = tmp_path / "mini"
    shutil.copytree(MINI, root)
    shutil.copytree(REPO / "templates", root / "templates", dirs_exist_ok=True)
    return root


def script(root: Path, text: str) -> None:
    (root / "repros" / "item07.py").write_text(text, encoding="utf-8")


def test_ok_run_is_stored_and_rendered_with_provenance(mini: Path) -> None:
    script(mini, 'print("measured: 42 nats")\nprint("verdict: reproduced")\n')
    result = run_repro(mini, 7, "repros/item07.py", torch="2.13.0+cpu")
    assert (result.status, result.exit_code, result.verdict) == ("ok", 0, "reproduced")
    assert result.python == ".".join(map(str, sys.version_info[:3]))
    save_result(mini, result)
    stored = load_result(mini, 7)
    assert stored is not None and stored["stdout"] == result.stdout
    catalog = load_catalog(mini)
    body = render_issue(catalog, catalog.get(7), repro_result=stored).body
    # The body gives the captured verdict and the environment it ran in.
    assert "verdict **reproduced** (Python " in body
    assert f"Python {result.python}, torch 2.13.0+cpu," in body


@pytest.mark.parametrize(
    ("text", "status", "why"),
    [
        ("raise SystemExit(3)\n", "failed", "crashed (exit 3)"),
        ("raise RuntimeError('boom')\n", "failed", "RuntimeError: boom"),
        ('print("no verdict here")\n', "failed", "printed no 'verdict:' line"),
    ],
)
def test_crash_is_reported_and_never_rendered(mini: Path, text: str, status: str, why: str) -> None:
    script(mini, text)
    result = run_repro(mini, 7, "repros/item07.py")
    assert result.status == status
    assert why in result.summary() + result.stderr
    save_result(mini, result)
    catalog = load_catalog(mini)
    body = render_issue(catalog, catalog.get(7), repro_result=load_result(mini, 7)).body
    assert "Captured output" not in body


def test_timeout_is_reported_and_never_rendered(mini: Path) -> None:
    script(mini, 'import time\nprint("verdict: reproduced", flush=True)\ntime.sleep(30)\n')
    result = run_repro(mini, 7, "repros/item07.py", timeout_s=0.5)
    assert result.status == "timeout"
    assert result.summary().startswith("timed out after ")
    assert 0.5 <= result.duration_s < 10
    save_result(mini, result)
    catalog = load_catalog(mini)
    body = render_issue(catalog, catalog.get(7), repro_result=load_result(mini, 7)).body
    assert "Captured output" not in body


def test_cli_repro_exit_codes(mini: Path) -> None:
    script(mini, 'print("verdict: reproduced")\n')
    ok = CliRunner().invoke(cli, ["--root", str(mini), "repro", "--item", "7"])
    assert ok.exit_code == 0, ok.output
    assert "item 7: reproduced in" in ok.output
    script(mini, "raise RuntimeError('boom')\n")
    bad = CliRunner().invoke(cli, ["--root", str(mini), "repro", "--all"])
    assert bad.exit_code == 1
    assert "[1/1] item 7" in bad.stderr
    assert "item 7: crashed (exit 1): RuntimeError: boom" in bad.output


def test_token_is_not_handed_to_the_script(mini: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GH_TOKEN", "ghp_CANARYxyz")
    script(mini, 'import os\nprint(os.environ.get("GH_TOKEN"))\nprint("verdict: reproduced")\n')
    result = run_repro(mini, 7, "repros/item07.py")
    assert "ghp_CANARYxyz" not in result.stdout


@pytest.mark.parametrize(
    ("text", "args", "why"),
    [
        ("raise RuntimeError('boom')\n", [], "crashed (exit 1)"),
        (
            'import time\ntime.sleep(30)\nprint("verdict: fixed")\n',
            ["--timeout", "0.5"],
            "timed out",
        ),
    ],
)
def test_a_failed_run_keeps_the_previous_capture(
    mini: Path, text: str, args: list[str], why: str
) -> None:
    script(mini, 'print("measured: 42 nats")\nprint("verdict: reproduced")\n')
    ok = CliRunner().invoke(cli, ["--root", str(mini), "repro", "--item", "7"])
    assert ok.exit_code == 0, ok.output
    good = (mini / "findings" / "results" / "07.json").read_bytes()
    script(mini, text)
    bad = CliRunner().invoke(cli, ["--root", str(mini), "repro", "--item", "7", *args])
    assert bad.exit_code == 1
    assert why in bad.output
    assert "kept the previous capture (reproduced, from " in bad.stderr
    # Byte for byte: the good capture still stands, and still renders.
    assert (mini / "findings" / "results" / "07.json").read_bytes() == good
    catalog = load_catalog(mini)
    body = render_issue(catalog, catalog.get(7), repro_result=load_result(mini, 7)).body
    assert "verdict **reproduced** (Python " in body


def test_a_failed_first_run_saves_nothing(mini: Path) -> None:
    script(mini, "raise SystemExit(2)\n")
    bad = CliRunner().invoke(cli, ["--root", str(mini), "repro", "--item", "7"])
    assert bad.exit_code == 1
    assert "no capture on file (findings/results/07.json); nothing saved" in bad.stderr
    assert not (mini / "findings" / "results" / "07.json").exists()


def test_render_says_when_an_item_has_no_capture(mini: Path) -> None:
    script(mini, 'import time\ntime.sleep(30)\nprint("verdict: fixed")\n')
    save_result(mini, run_repro(mini, 7, "repros/item07.py", timeout_s=0.5))
    out = CliRunner().invoke(cli, ["--root", str(mini), "render", "--item", "7"])
    assert out.exit_code == 0, out.output
    assert "item 7: no usable capture on file" in out.stderr
    assert "artbot repro --item 7" in out.stderr
