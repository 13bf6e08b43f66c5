# ruff: noqa: F811  (the fixtures art and root come from test_apply)
"""#21.1: a downloaded wheel's code runs in a child process that holds no token, and what it
prints or writes back is untrusted text (never echoed raw, parsed as validated results)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.report.output import flatten
from artbot.sandbox import GitHubSandbox
from artbot.verify.apart import child_env
from tests.test_apply import CANARY, NAME, OWNER, TRACKING, art, root  # noqa: F401

# A module of the crafted release: at import it looks for a token everywhere it could be,
# writes what it found beside it, and prints a workflow command with the token in it.
SPY = """
import os, json, pathlib
found = {k: v for k, v in os.environ.items()
         if 'TOKEN' in k.upper() or k.upper().startswith(('GITHUB', 'INPUT', 'ARTBOT_SECRET'))
         or v == CANARY}
pathlib.Path(SPYFILE).write_text(json.dumps(found))
print('::warning::pwned ' + str(os.environ.get('GH_TOKEN')))
import sys
print('\\n::error::also pwned', file=sys.stderr)
def loss_fn(*args, **kwargs):
    raise RuntimeError('crafted release')
"""


def crafted_files(spyfile: Path) -> dict[str, str]:
    return {
        "art/__init__.py": "",
        "art/loss.py": f"CANARY = {CANARY!r}\nSPYFILE = {str(spyfile)!r}\n" + SPY,
    }


def test_child_env_keeps_no_token_nor_anything_secret_looking() -> None:
    env = {
        "PATH": "/usr/bin",
        "HOME": "/home/x",
        "LC_ALL": "C.UTF-8",
        "ATEN_CPU_CAPABILITY": "default",
        "ARTBOT_CACHE_DIR": "/cache",
        "GH_TOKEN": CANARY,
        "GITHUB_TOKEN": CANARY,
        "GITHUB_REPOSITORY": "OpenPipe/ART",
        "ACTIONS_RUNTIME_TOKEN": "runtime-token-value",
        "INPUT_GITHUB-TOKEN": CANARY,
        "ARTBOT_AUTHORS": "someone",
        "AWS_SECRET_ACCESS_KEY": "xyzxyzxyzxyz",
        "TORCH_API_KEY": "k" * 20,
        "PYTHONPATH": f"/tmp/{CANARY}",  # a safe name holding the token's value
    }
    out = child_env(env, [CANARY + "\n"])
    assert out == {
        "PATH": "/usr/bin",
        "HOME": "/home/x",
        "LC_ALL": "C.UTF-8",
        "ATEN_CPU_CAPABILITY": "default",
        "ARTBOT_CACHE_DIR": "/cache",
        "PYTHONIOENCODING": "utf-8",
    }


def test_flatten_makes_one_printable_line() -> None:
    assert flatten("a\n::error::b\r\x1b[31mc\u2028d") == "a ::error::b [31mc d"


def _no_command_from_wheel(text: str) -> None:
    assert CANARY not in text
    assert not [ln for ln in text.splitlines() if ln.lstrip().startswith("::")]
    assert "pwned" not in text


@pytest.mark.e2e
@pytest.mark.repro
def test_verify_runs_a_crafted_tree_without_the_token(root: Path, tmp_path: Path) -> None:
    """Done when: a crafted release's module reading GH_TOKEN at import finds none under
    `verify`; its prints reach no output."""
    spyfile = tmp_path / "spy.json"
    wheel = tmp_path / "wheel"
    for rel, text in crafted_files(spyfile).items():
        (wheel / rel).parent.mkdir(parents=True, exist_ok=True)
        (wheel / rel).write_text(text)
    env = {"GH_TOKEN": CANARY, "GITHUB_TOKEN": CANARY, "GITHUB_ACTIONS": "true"}
    result = CliRunner(env=env).invoke(
        cli, ["--root", str(root), "verify", "code", "--art-src", str(wheel), "--json"]
    )
    assert spyfile.is_file(), result.output  # the crafted module did run
    assert json.loads(spyfile.read_text()) == {}
    _no_command_from_wheel(result.output)
    data = json.loads(result.output)
    by_item = {r["item"]: r for r in data["results"]}
    assert by_item[7]["status"] == "could not run"
    assert "crafted release" in by_item[7]["detail"]


@pytest.mark.e2e
@pytest.mark.repro
def test_sync_verify_runs_a_crafted_release_without_the_token(
    art: GitHubSandbox, root: Path, tmp_path: Path
) -> None:
    """Done when: ... and under `sync --verify` (the wheel from the cache, as pip left it)."""
    spyfile = tmp_path / "spy.json"
    cache = tmp_path / "wheels"
    cache.mkdir()
    with zipfile.ZipFile(cache / "openpipe_art-9.9.9-py3-none-any.whl", "w") as whl:
        for rel, text in crafted_files(spyfile).items():
            whl.writestr(rel, text)
    env = {
        "GH_TOKEN": CANARY,
        "GITHUB_TOKEN": None,
        "GITHUB_ACTIONS": None,
        "ARTBOT_CACHE_DIR": str(cache),
        "ARTBOT_SECONDARY_RATE_WAIT": "1",
    }
    args = ["--root", str(root), "sync", "--verify", "9.9.9", "--api-url", art.api_url]
    args += ["--repo", f"{OWNER}/{NAME}", "--tracking-issue", str(TRACKING)]
    result = CliRunner(env=env).invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert spyfile.is_file(), result.output
    assert json.loads(spyfile.read_text()) == {}
    _no_command_from_wheel(result.output)


def test_the_childs_results_are_validated_and_made_inert(tmp_path: Path) -> None:
    """What the child writes is the wheel's to forge: claims the record does not declare make
    the item "could not run"; text is one line with no mention, link or HTML."""
    from artbot.verify.apart import parse_results
    from artbot.verify.tree import ArtTree

    tree = ArtTree("openpipe-art 9.9.9", tmp_path, "src/art/")
    claim = {"verdict": "fixed", "detail": "line\n::error::x @team ![i](http://e/i.png) <b>"}
    data = {
        "results": [
            {
                "item": 7,
                "status": "fixed",
                "detail": "@OpenPipe/maintainers",
                "claims": {"c": claim},
            },
            {"item": 8, "status": "fixed", "detail": "", "claims": {"forged": claim}},
        ]
    }
    with pytest.raises(TypeError, match="item 8: claims the record does not declare"):
        parse_results(data, {7: {"c"}, 8: {"real"}}, tree)
    [seven] = parse_results({"results": data["results"][:1]}, {7: {"c"}}, tree)
    detail = seven.claims["c"].detail
    # Recorded as plain text: one line, no mention; shown as inert markdown: no image, no HTML.
    assert "\n" not in detail and "@team" not in detail and "@\u2060team" in detail
    assert "@OpenPipe" not in seven.detail
    from artbot.status.view import cell_text

    shown = cell_text(detail)
    assert "![" not in shown and "<b>" not in shown and "&lt;b&gt;" in shown


def test_a_release_tree_carries_its_wheels_sha256_and_a_changed_wheel_is_refused(
    tmp_path: Path,
) -> None:
    import hashlib

    from artbot.catalog import load_catalog
    from artbot.errors import ReleaseUnavailable
    from artbot.verify.release import release_tree
    from tests.test_apply import REPO

    audit = load_catalog(REPO).audit
    wheel = tmp_path / "openpipe_art-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as whl:
        whl.writestr("art/__init__.py", "")
    tree = release_tree("9.9.9", audit, tmp_path)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert tree.sha256 == digest
    assert f"wheel {wheel.name}, sha256 {digest}" in tree.notes
    (tmp_path / (wheel.name + ".sha256")).write_text("0" * 64 + "\n")  # recorded at download
    with pytest.raises(ReleaseUnavailable, match="changed since it was downloaded"):
        release_tree("9.9.9", audit, tmp_path)


@pytest.mark.e2e
@pytest.mark.repro
def test_verify_record_keeps_the_wheels_sha256_in_the_status_files(
    root: Path, tmp_path: Path
) -> None:
    import hashlib

    cache = tmp_path / "wheels"
    cache.mkdir()
    wheel = cache / "openpipe_art-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as whl:
        whl.writestr("art/__init__.py", "")
    env = {"ARTBOT_CACHE_DIR": str(cache), "GH_TOKEN": None, "GITHUB_TOKEN": None}
    result = CliRunner(env=env).invoke(
        cli, ["--root", str(root), "verify", "--release", "9.9.9", "--record"]
    )
    assert "recorded 9.9.9" in result.output, result.output
    status = json.loads((root / "findings" / "status" / "07.json").read_text())
    [point] = [p for p in status["points"] if p["label"] == "9.9.9"]
    assert point["wheel_sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()


def test_git_in_a_checkout_runs_nothing_of_its_config_and_sees_no_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from artbot.verify.tree import git, git_env

    monkeypatch.setenv("GH_TOKEN", CANARY)
    monkeypatch.setenv("ACTIONS_RUNTIME_TOKEN", "runtime-credential")
    assert "GH_TOKEN" not in git_env() and "ACTIONS_RUNTIME_TOKEN" not in git_env()
    command = git(Path("art"))
    assert command[0] == "git" and command[-2:] == ["-C", "art"]
    assert "core.fsmonitor=false" in command and "core.hooksPath=/dev/null" in command
