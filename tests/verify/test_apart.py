"""#21.1: a downloaded wheel's code runs in a child process that holds no token, and what it
prints or writes back is untrusted text (never echoed raw, parsed as validated results)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.report.output import flatten
from artbot.sandbox import GitHubSandbox
from artbot.verify.apart import child_env
from tests.helpers.artrepo import CANARY, NAME, OWNER, TRACKING
from tests.helpers.wheels import crafted_wheel

# A module of the crafted release: at import it looks for a token in its environment, prints
# a workflow command with the token in it, and raises what it found (its error's text is the
# one way out of a confined check; tests/verify/test_confine.py tries the others).
SPY = """
import os, json, pathlib
found = {k: v for k, v in os.environ.items()
         if 'TOKEN' in k.upper() or k.upper().startswith(('GITHUB', 'INPUT', 'ARTBOT_SECRET'))
         or v == CANARY}
print('::warning::pwned ' + str(os.environ.get('GH_TOKEN')))
import sys
print('\\n::error::also pwned', file=sys.stderr)
raise RuntimeError('crafted release, environment ' + json.dumps(sorted(found)))
"""


def crafted_files() -> dict[str, str]:
    return {"art/__init__.py": "", "art/loss.py": f"CANARY = {CANARY!r}\n" + SPY}


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
    wheel = tmp_path / "wheel"
    for rel, text in crafted_files().items():
        (wheel / rel).parent.mkdir(parents=True, exist_ok=True)
        (wheel / rel).write_text(text)
    # No token: this test is about the child's environment, confined or not (the confinement
    # and the refusal without it: tests/verify/test_confine.py).
    env: dict[str, str | None] = {"GH_TOKEN": None, "GITHUB_TOKEN": None, "GITHUB_ACTIONS": None}
    env |= {"INPUT_GITHUB-TOKEN": CANARY, "ARTBOT_SECRET_X": CANARY, "GITHUB_REPOSITORY": "a/b"}
    result = CliRunner(env=env).invoke(
        cli, ["--root", str(root), "verify", "code", "--art-src", str(wheel), "--json"]
    )
    _no_command_from_wheel(result.output)
    if result.exit_code == 2 and "cannot be confined here" in result.output:
        return  # no namespaces here, and a token-named variable is set: refused, nothing ran
    data = json.loads(result.output)
    by_item = {r["item"]: r for r in data["results"]}
    assert by_item[7]["status"] == "could not run"
    assert "crafted release, environment []" in by_item[7]["detail"]  # it ran, and found none


@pytest.mark.e2e
def test_sync_verify_runs_no_art_code_and_reports_the_recorded_check(
    art: GitHubSandbox, root: Path, tmp_path: Path
) -> None:
    """The process that holds the token never imports a release: `sync --verify` reads the
    check `verify --record` recorded (here none: it says so and exits 1, having run nothing)."""
    spyfile = tmp_path / "spy.txt"
    cache = tmp_path / "wheels"
    cache.mkdir()
    spy = f"open({str(spyfile)!r}, 'w').write('ran')\n"
    crafted_wheel(
        cache / "openpipe_art-9.9.9-py3-none-any.whl", {"art/__init__.py": "", "art/loss.py": spy}
    )
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
    assert result.exit_code == 1, result.output
    assert "findings/status/ records no check of openpipe-art 9.9.9" in result.output
    assert "artbot verify --release 9.9.9 --record" in result.output
    assert not spyfile.exists()
    assert all(r.method == "GET" for r in art.requests)


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
    from artbot.render.status_view import cell_text

    shown = cell_text(detail)
    assert "![" not in shown and "<b>" not in shown and "&lt;b&gt;" in shown


def _wheel(folder: Path, loss: str = "") -> Path:
    wheel = folder / "openpipe_art-9.9.9-py3-none-any.whl"
    return crafted_wheel(wheel, {"art/__init__.py": "", "art/loss.py": loss})


def _index(sha256: str | None) -> Any:
    """pip as a stand-in: `pip install --report -` answers as the index would, with
    ``sha256`` as the file's published digest (None: the index publishes none)."""

    def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        assert "--report" in command and "install" in command and "--dry-run" in command
        hashes = {"sha256": sha256} if sha256 else {}
        info = {"url": "https://index.invalid/f/openpipe_art-9.9.9-py3-none-any.whl"}
        info["archive_info"] = {"hashes": hashes}  # type: ignore[assignment]
        report = {"install": [{"download_info": info, "metadata": {"version": "9.9.9"}}]}
        return subprocess.CompletedProcess(command, 0, json.dumps(report), "")

    return run


def test_a_release_is_pinned_by_the_index_never_by_the_cache(tmp_path: Path) -> None:
    """Done when: a wheel with no digest from the index, or a digest only in the cache, is
    refused; one that is not the index's is refused; the pinned one is unpacked afresh."""
    import hashlib

    from artbot.errors import ReleaseUnavailable
    from artbot.records.catalog import load_catalog
    from artbot.verify.release import release_tree
    from tests.helpers.artrepo import REPO

    audit = load_catalog(REPO).audit
    wheel = _wheel(tmp_path, "LOSS = 'the wheel'\n")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    # A digest kept beside the wheel in the cache counts for nothing.
    (tmp_path / (wheel.name + ".sha256")).write_text(digest + "\n")
    with pytest.raises(ReleaseUnavailable, match="publishes no sha256"):
        release_tree("9.9.9", audit, tmp_path, run=_index(None))
    with pytest.raises(ReleaseUnavailable, match="is not the release"):
        release_tree("9.9.9", audit, tmp_path, run=_index("0" * 64))
    # An unpacked copy in the cache, edited by someone, is never what runs.
    stale = tmp_path / wheel.name.removesuffix(".whl")
    (stale / "art").mkdir(parents=True)
    (stale / "art" / "loss.py").write_text("LOSS = 'edited in the cache'\n")
    (stale / ".artbot-unpacked").write_text(wheel.name)
    tree = release_tree("9.9.9", audit, tmp_path, run=_index(digest), into=tmp_path / "run")
    assert tree.sha256 == digest
    assert f"wheel {wheel.name}, sha256 {digest} (from the index), unpacked afresh" in tree.notes
    assert tree.package_dir.parent.parent == tmp_path / "run"
    assert (tree.package_dir / "loss.py").read_text() == "LOSS = 'the wheel'\n"


def test_a_recorded_digest_pins_the_release_without_asking_the_index(
    root: Path, tmp_path: Path
) -> None:
    import hashlib

    from artbot.errors import ReleaseUnavailable
    from artbot.verify.release import recorded_pin
    from tests.helpers.confine import record_pin

    wheel = _wheel(tmp_path)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert recorded_pin(root, "9.9.9") is None
    record_pin(root, "9.9.9", digest)
    pin = recorded_pin(root, "9.9.9")
    assert pin is not None and pin.sha256 == digest
    assert pin.source == "recorded in findings/status/"
    # The wheel changed in the cache: refused, whatever the cache says.
    from artbot.records.catalog import load_catalog
    from artbot.verify.release import release_tree

    _wheel(tmp_path, "import os\n")
    with pytest.raises(ReleaseUnavailable, match="recorded in findings/status/"):
        release_tree("9.9.9", load_catalog(root).audit, tmp_path, pin=pin, run=_index(None))


@pytest.mark.e2e
@pytest.mark.repro
def test_verify_record_keeps_the_wheels_sha256_in_the_status_files(
    root: Path, tmp_path: Path
) -> None:
    import hashlib

    from tests.helpers.confine import record_pin

    cache = tmp_path / "wheels"
    cache.mkdir()
    wheel = _wheel(cache)
    record_pin(root, "9.9.9", hashlib.sha256(wheel.read_bytes()).hexdigest())
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
    from artbot.verify.gitread import CONFIG, SAFE_CONFIG, minimal_env

    monkeypatch.setenv("GH_TOKEN", CANARY)
    monkeypatch.setenv("ACTIONS_RUNTIME_TOKEN", "runtime-credential")
    env = minimal_env("/nowhere")
    assert set(env) == {
        "PATH", "HOME", "LC_ALL", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL",
        "GIT_TERMINAL_PROMPT", "GIT_NO_LAZY_FETCH", "GIT_NO_REPLACE_OBJECTS",
    }  # fmt: skip
    assert CANARY not in str(env) and env["GIT_CONFIG_GLOBAL"] == "/dev/null"
    assert "protocol.allow=never" in SAFE_CONFIG and "core.hooksPath=/dev/null" in SAFE_CONFIG
    assert "promisor" not in CONFIG and "remote" not in CONFIG
