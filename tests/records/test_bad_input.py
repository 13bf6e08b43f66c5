"""#21.6: every bad input is exit 2 with the file and the field named, never "internal error"
nor a request sent: status files, JSON limits, versions, checked_on, --repo, export-tests,
the action's findings-path; and a connection error is one complete line with the fix."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.errors import BadInput
from artbot.inputs import check_repository, check_version
from artbot.records.catalog import load_catalog
from artbot.sandbox import GitHubSandbox
from artbot.status import status_path
from tests.helpers.artrepo import CANARY, artbot, issues_for
from tests.helpers.statusdata import fixed_item, install


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner(env={"GH_TOKEN": CANARY, "GITHUB_ACTIONS": None}).invoke(cli, list(args))
    return result.exit_code, result.stdout + result.stderr


def _status(root: Path) -> Path:
    install(root, load_catalog(root).get(7), fixed_item(load_catalog(root).get(7)))
    return status_path(root, 7)


@pytest.mark.parametrize(
    ("corrupt", "field"),
    [
        (lambda text: text[:-20], ""),  # cut short: not JSON
        (lambda text: "\ufeff" + text, ""),  # a byte-order mark
        (lambda text: text.replace('"item": 7', '"item": "seven"', 1), "item"),
        (
            lambda text: text.replace('"2026-12-02"', '"@team ![x](http://e/x.png)"', 1),
            "checked_on",
        ),
        (lambda text: text.replace('"2026-12-02"', '"2026-13-45"', 1), "checked_on"),
        (lambda text: "[" * 200_000 + "]" * 200_000, ""),  # nested 200k deep
        (lambda text: text.replace('"item": 7', '"item": 8', 1), "item"),  # not the file's item
    ],
)
def test_a_bad_status_file_fails_validate_with_its_file_and_field(
    root: Path, corrupt: object, field: str
) -> None:
    """Why 8: status files with bad JSON, wrong types or a BOM passed `validate` and made
    open/sync exit 1; 200k-deep nesting was an internal error; checked_on landed raw."""
    path = _status(root)
    text = path.read_text(encoding="utf-8")
    assert '"checked_on": "2026-12-02"' in text
    path.write_text(corrupt(text), encoding="utf-8")  # type: ignore[operator]
    code, out = invoke("--root", str(root), "validate")
    assert code == 2, out
    assert "internal error" not in out
    [line, *_] = [ln for ln in out.splitlines() if ln.startswith("findings/status/07.json")]
    if field:  # the field's path, e.g. points.0.checked_on
        assert line.split(": ")[1].split(".")[-1] == field, line
    code, out = invoke("--root", str(root), "render", "--item", "7")
    assert code == 2 and "internal error" not in out, out


def test_a_bad_status_file_stops_sync_with_exit_2_before_any_request(
    art: GitHubSandbox, root: Path
) -> None:
    path = _status(root)
    path.write_text("\ufeff" + path.read_text(encoding="utf-8"), encoding="utf-8")
    result = artbot(art, root, "sync")
    assert result.exit_code == 2, result.output
    assert "findings/status/07.json" in result.output
    assert len(art.requests) == 0


@pytest.mark.parametrize(
    "cache",
    [
        {"etags": {"k": "not an entry"}, "labels": 5},
        {"etags": [], "labels": []},
        {"etags": {"x": {"etag": 1}}, "labels": ["a"], "identities": {"a": 3}},
        "[" * 100_000,
    ],
)
def test_a_cache_of_the_wrong_shape_costs_only_full_reads(
    art: GitHubSandbox, root: Path, cache: object
) -> None:
    (root / ".artbot").mkdir()
    text = cache if isinstance(cache, str) else json.dumps(cache)
    (root / ".artbot" / "cache.json").write_text(text, encoding="utf-8")
    result = artbot(art, root, "open", "--item", "4")
    assert result.exit_code == 0, result.output
    assert len(issues_for(art, 4)) == 1


@pytest.mark.parametrize(
    "version", ["0.5.21\n", "9" * 10_000, "0.5.21 --index-url x", "-r x", "latest1", "0.5.21;"]
)
def test_versions_are_pep_440_in_full(version: str) -> None:
    """Why 8: `0.5.21\\n` and 10 KB of digits reached pip."""
    from artbot.verify.release import fetch_release

    def never(*args: object, **kwargs: object) -> object:
        raise AssertionError("pip was run")

    with pytest.raises(BadInput, match="not a version number"):
        fetch_release(version, run=never)  # type: ignore[arg-type]


def test_good_versions_pass() -> None:
    for version in ("0.5.21", "1.0rc1", "2.0.post1", "1!2.0.dev3+local.1", "0.5"):
        assert check_version(version) == version


def test_sync_verify_with_a_bad_version_is_exit_2(art: GitHubSandbox, root: Path) -> None:
    result = artbot(art, root, "sync", "--verify", "0.5.21\n")
    assert result.exit_code == 2, result.output
    assert "not a version number" in result.output


@pytest.mark.parametrize(
    "repo", ["OpenPipe", "OpenPipe/ART/issues", "https://github.com/OpenPipe/ART/issues", "../.."]
)
def test_repo_must_be_owner_name(art: GitHubSandbox, root: Path, repo: str) -> None:
    """Why 8: `--repo https://github.com/OpenPipe/ART` was sent as a path. (Its URL forms are
    taken now: tests/cli/test_repo_option.py.)"""
    code, out = invoke("--root", str(root), "sync", "--api-url", art.api_url, "--repo", repo)
    assert code == 2, out
    assert f"--repo {repo!r}: not a repository; give OWNER/NAME" in out
    assert len(art.requests) == 0
    with pytest.raises(BadInput):
        check_repository(repo)


def test_export_tests_refuses_a_symlink_inside_out(root: Path, tmp_path: Path) -> None:
    """Why 8: export-tests wrote through a symlink inside OUT."""
    out, victim = tmp_path / "out", tmp_path / "victim.txt"
    out.mkdir()
    victim.write_text("keep me")
    name = sorted((root / "repros" / "regression").glob("test_*.py"))[0].name
    (out / name).symlink_to(victim)
    code, text = invoke("--root", str(root), "export-tests", "--out", str(out))
    assert code == 2, text
    assert "symbolic link" in text and "internal error" not in text
    assert victim.read_text() == "keep me"


@pytest.mark.parametrize("kind", ["dangling", "link", "proc"])
def test_export_tests_to_a_bad_out_is_exit_2(root: Path, tmp_path: Path, kind: str) -> None:
    """Why 8: `--out` at a dangling link or /proc ended as "internal error"."""
    if kind == "proc":
        out = Path("/proc/artbot-export")
    else:
        out = tmp_path / "out"
        target = tmp_path / ("missing" if kind == "dangling" else "real")
        if kind == "link":
            target.mkdir()
        os.symlink(target, out)
    code, text = invoke("--root", str(root), "export-tests", "--out", str(out))
    assert code == 2, text
    assert "--out" in text and "internal error" not in text


def test_a_connection_error_is_one_complete_line_with_the_fix(root: Path) -> None:
    """Why 8: a connection error was cut mid-word with no hint."""
    code, text = invoke(
        "--root", str(root), "sync", "--api-url", "http://127.0.0.1:9", "--tracking-issue", "5"
    )
    assert code == 1, text
    [line] = [ln for ln in text.splitlines() if ln.startswith("error:")]
    assert "could not connect to 127.0.0.1:9" in line
    assert line.endswith("check --api-url (or $GITHUB_API_URL) and the network")


@pytest.mark.e2e
@pytest.mark.parametrize("path", ["../../", "/etc", "audit/../../x", "link"])
def test_the_action_confines_findings_path_to_the_workspace(
    sandbox: GitHubSandbox, tmp_path: Path, path: str
) -> None:
    """Why 8: the action's `findings-path: ../../` was not confined to the workspace."""
    from tests.helpers.action_harness import direct

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "link").symlink_to(tmp_path)
    run = direct({"command": "sync", "findings-path": path}, workspace, sandbox)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "::error::findings-path: " in run.stdout and "give a folder inside the workspace" in (
        run.stdout
    )
    assert len(sandbox.requests) == 0


def test_json_limits() -> None:
    from artbot.jsonlimits import JsonTooLarge, loads_limited

    assert loads_limited('{"a": ["[[[[", {"b": 1}]}') == {"a": ["[[[[", {"b": 1}]}
    assert loads_limited('"\\\\"') == "\\"
    with pytest.raises(JsonTooLarge):
        loads_limited("[" * 65 + "]" * 65)
    assert loads_limited("[" * 64 + "]" * 64, max_depth=64)
    with pytest.raises(JsonTooLarge):
        loads_limited("[1, 2]", max_bytes=3)
    with pytest.raises(ValueError, match="byte-order mark"):
        loads_limited("\ufeff{}")


def test_a_bad_captured_result_is_exit_2(root: Path) -> None:
    results = root / "findings" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "07.json").write_text("[" * 100_000, encoding="utf-8")
    code, out = invoke("--root", str(root), "render", "--item", "7")
    assert code == 2, out
    assert "findings/results/07.json" in out and "internal error" not in out
