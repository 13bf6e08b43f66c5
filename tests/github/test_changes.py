"""The change behind a fix, asked of GitHub (the sandbox, over HTTP through PyGithub): the
commit between the audit commit and the release's tag whose patch adds the fixing line."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.github.changes import find_change, record_changes
from artbot.github.client import GitHubRepo
from artbot.records.catalog import load_catalog
from artbot.status import SourceLine, load_status
from tests.helpers.testsandbox import TestSandbox

REPO = Path(__file__).resolve().parents[2]
AUDIT_SHA = "e2a406a48" + "0" * 31
TIS_LINE = '"Skipping truncated importance sampling because original_logprobs "'
ISFINITE = "~torch.isfinite(old_logprobs),"


def patch(added: str) -> str:
    return f"@@ -1,2 +1,3 @@\n context\n-            old\n+            {added}\n"


@pytest.fixture
def sandbox() -> Iterator[TestSandbox]:
    with TestSandbox() as box:
        box.create_repo("OpenPipe", "ART")
        yield box


def seed_history(box: TestSandbox, *, tag: str | None = "v0.5.21") -> dict[str, str]:
    shas = {
        "audit": box.seed_commit("OpenPipe", "ART", "the audited commit", {}, sha=AUDIT_SHA),
        "docs": box.seed_commit("OpenPipe", "ART", "Docs", {"README.md": patch("words")}),
        "tis": box.seed_commit(
            "OpenPipe",
            "ART",
            "Skip TIS without original logprobs\n\nlong body",
            {"src/art/loss.py": patch(TIS_LINE)},
            pulls=[(512, "Skip TIS when original_logprobs are missing\n<script>x</script>")],
        ),
        "ratio": box.seed_commit(
            "OpenPipe", "ART", "Clamp the log-ratio", {"src/art/loss.py": patch(ISFINITE)}
        ),
    }
    if tag:
        box.seed_tag("OpenPipe", "ART", tag, shas["ratio"])
    return shas


def reader(box: TestSandbox):  # type: ignore[no-untyped-def]
    repo = GitHubRepo("someone/artbot", api_url=box.api_url, token="t")
    return lambda endpoint, params: repo.read_upstream("OpenPipe/ART", endpoint, params)


def line(look_for: str) -> SourceLine:
    return SourceLine(path="art/loss.py", line=388, end=395, look_for=look_for)


def test_the_commit_that_adds_the_line_is_the_change_with_its_pull_request(
    sandbox: TestSandbox,
) -> None:
    shas = seed_history(sandbox)
    audit = load_catalog(REPO).audit
    change = find_change(reader(sandbox), audit, "0.5.21", line(TIS_LINE))
    assert change.identified, change
    assert change.commit == shas["tis"] and change.pull == 512
    # The sandbox's web links are on another host: the link is built on the audit's.
    assert change.url == "https://github.com/OpenPipe/ART/pull/512"
    assert change.title == "Skip TIS when original_logprobs are missing <script>x</script>"
    assert "\n" not in change.title
    # Without a pull request, the commit names it.
    change = find_change(reader(sandbox), audit, "0.5.21", line(ISFINITE))
    assert (change.commit, change.pull, change.title) == (
        shas["ratio"],
        None,
        "Clamp the log-ratio",
    )
    assert change.url == f"https://github.com/OpenPipe/ART/commit/{shas['ratio']}"
    paths = [r.path for r in sandbox.requests]
    assert f"/repos/OpenPipe/ART/compare/{audit.commit}...v0.5.21" in paths


def test_no_tag_upstream_or_no_commit_adding_the_line_is_not_identified(
    sandbox: TestSandbox,
) -> None:
    audit = load_catalog(REPO).audit
    seed_history(sandbox, tag=None)
    change = find_change(reader(sandbox), audit, "0.5.21", line(TIS_LINE))
    assert not change.identified and change.commit is None
    assert change.note == (
        "OpenPipe/ART has no tag v0.5.21 (or 0.5.21) that GitHub can compare with e2a406a48"
    )
    sandbox.seed_tag("OpenPipe", "ART", "0.5.21", sandbox.seed_commit("OpenPipe", "ART", "x", {}))
    change = find_change(reader(sandbox), audit, "0.5.21", line("a line nobody wrote"))
    assert not change.identified
    assert change.note == (
        "2 commit(s) between e2a406a48 and 0.5.21 change src/art/loss.py; none of those read "
        "adds the line 'a line nobody wrote'"
    )
    other = SourceLine(path="art/other.py", line=1, look_for="x")
    assert find_change(reader(sandbox), audit, "0.5.21", other).note == (
        "no commit between e2a406a48 and 0.5.21 changes src/art/other.py"
    )


def copy_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(REPO / "findings", root / "findings")
    shutil.copytree(REPO / "repros", root / "repros")
    return root


def test_verify_changes_records_each_fix_once_and_keeps_it(
    sandbox: TestSandbox, tmp_path: Path
) -> None:
    shas = seed_history(sandbox)
    root = copy_root(tmp_path)
    # Only items 7 and 8 have their fixing commits in this sandbox's history; the other items'
    # fixes would be "not identified" here, and those are asked again on every run.
    for path in (root / "findings" / "status").glob("[0-9][0-9].json"):
        if path.stem not in ("07", "08"):
            path.unlink()
    args = ["--root", str(root), "verify", "changes", "--record", "--api-url", sandbox.api_url]
    result = CliRunner().invoke(cli, args, env={"GH_TOKEN": "sandbox-token-1"})
    assert result.exit_code == 0, result.output
    assert "item 7 policy-ratio-applied-twice fixed in 0.5.21: " in result.output
    for item, sha in ((7, shas["tis"]), (8, shas["ratio"])):
        status = load_status(root, item)
        assert status is not None
        fixed = {p.label: p for p in status.releases()}
        [claim] = fixed["0.5.21"].claims.values()
        assert claim.fix is not None and claim.fix.change is not None
        assert claim.fix.change.commit == sha
        # Only the release that fixed it carries the change.
        [later] = fixed["0.5.23"].claims.values()
        assert later.fix is not None and later.fix.change is None
    # Recorded changes are not asked for again.
    sandbox.requests.clear()
    again = CliRunner().invoke(cli, args, env={"GH_TOKEN": "sandbox-token-1"})
    assert again.exit_code == 0 and "fixed in" not in again.output
    assert not any("compare" in r.path for r in sandbox.requests)


def test_record_changes_leaves_claims_without_fix_lines_alone(sandbox: TestSandbox) -> None:
    from artbot.status import ClaimResult, ClaimVerdict, ItemStatus, Method, StatusPoint

    def point(label: str, verdict: ClaimVerdict) -> StatusPoint:
        result = ClaimResult(verdict=verdict, method=Method.ran)
        return StatusPoint(
            source="release",
            label=label,
            checked_on="2026-12-03",
            artbot_version="0",
            claims={"c": result},
        )

    status = ItemStatus(
        item=10,
        points=[point("0.5.20", ClaimVerdict.reproduced), point("0.5.21", ClaimVerdict.fixed)],
    )
    seed_history(sandbox)
    sandbox.requests.clear()
    updated, report = record_changes(status, load_catalog(REPO).audit, reader(sandbox))
    assert updated == status and report == []
    assert len(sandbox.requests) == 0


def test_a_github_that_answers_an_error_leaves_the_change_not_identified() -> None:
    from artbot.errors import RemoteError

    def read(endpoint: str, params: object) -> object:
        raise RemoteError("GET x: token-free message", 502)

    change = find_change(read, load_catalog(REPO).audit, "0.5.21", line(TIS_LINE))
    assert not change.identified
    assert change.note == "GitHub answered 502 when artbot asked"


def test_a_github_not_reached_is_no_finding_about_the_change() -> None:
    """#40: GitHub unreachable was recorded as the change's note in every status file."""
    from artbot.errors import RemoteError

    def read(endpoint: str, params: object) -> object:
        raise RemoteError("GET x: could not connect to api.github.com:443")

    with pytest.raises(RemoteError, match="could not connect"):
        find_change(read, load_catalog(REPO).audit, "0.5.21", line(TIS_LINE))
