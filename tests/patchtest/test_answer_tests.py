"""#41 against the sandbox, with PyGithub over HTTP: `artbot answer-tests` answers a writer's
`/artbot test` exactly once (a diff, or a pull request of ART's fetched as its diff), never a
reader's, a bot's or artbot's own; refuses in one line what does not apply, touches files
outside src/art/ or is over a cap; answers an edited comment again and a repeated request with
a link to the earlier answer. The record of what was answered is artbot's own comments."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.patchtest.command import MAX_PATCH_BYTES
from artbot.patchtest.plan import Comment, Task, plan
from artbot.sandbox import GitHubSandbox
from tests.helpers.answering import (
    ARTBOT,
    FIXTURES,
    READER,
    REPO,
    WRITER,
    answer,
    answers,
    filed,
)
from tests.helpers.patchdiff import RELEASE, as_comment, make_diff
from tests.helpers.sandbox_client import NAME, OWNER, TOKEN
from tests.helpers.testsandbox import TestSandbox
from tests.helpers.wheels import default_wheels


@pytest.fixture
def issue(sandbox: GitHubSandbox) -> int:
    sandbox.create_repo(OWNER, NAME)
    sandbox.set_permission(OWNER, NAME, WRITER, "write")
    return filed(sandbox, 801)


@pytest.mark.network  # runs the checks on the release's wheel
def test_a_writers_diff_gets_exactly_one_answer_and_a_second_pass_adds_none(
    sandbox: GitHubSandbox, issue: int
) -> None:
    default_wheels().wheel(RELEASE)  # skipped (failed under CI) when it cannot be had
    fix = (FIXTURES / "item801_fix.diff").read_text(encoding="utf-8")
    sandbox.seed_comment(OWNER, NAME, issue, as_comment(fix), user=WRITER)
    first = answer(sandbox)
    assert first.exit_code == 0, first.output
    [body] = answers(sandbox, issue)
    assert "item 801, openpipe-art 0.5.23" in body and "**fixed" in body
    assert "| `sentinel-dominates-loss` | reproduced | fixed |" in body
    assert "xfail → pass" in body and TOKEN not in body, body
    again = answer(sandbox)
    assert again.exit_code == 0, again.output
    assert len(answers(sandbox, issue)) == 1


def test_a_readers_a_bots_and_artbots_own_requests_get_none(
    sandbox: TestSandbox, issue: int
) -> None:
    fix = as_comment((FIXTURES / "item801_fix.diff").read_text(encoding="utf-8"))
    for login in (READER, "dependabot[bot]", ARTBOT):
        sandbox.seed_comment(OWNER, NAME, issue, fix, user=login)
    # A writer whose permission cannot be read counts as none (fails closed).
    sandbox.seed_comment(OWNER, NAME, issue, fix, user="unknowable")
    sandbox.inject_fault("GET", r".*/collaborators/unknowable/permission", 500, times=10)
    result = answer(sandbox)
    assert result.exit_code == 0, result.output
    assert answers(sandbox, issue) == []
    assert not any(r.method == "POST" for r in sandbox.requests)


@pytest.mark.network  # runs the checks on the release's wheel
def test_a_pull_request_is_fetched_as_its_diff_and_tested(sandbox: TestSandbox, issue: int) -> None:
    default_wheels().wheel(RELEASE)
    fix = (FIXTURES / "item801_fix.diff").read_text(encoding="utf-8")
    pull = sandbox.seed_pull(OWNER, NAME, "Treat a stale old logprob as missing", fix)
    sandbox.seed_comment(OWNER, NAME, issue, f"/artbot test #{pull}", user=WRITER)
    result = answer(sandbox)
    assert result.exit_code == 0, result.output
    [body] = answers(sandbox, issue)
    head = hashlib.sha1(fix.encode(), usedforsecurity=False).hexdigest()  # the sandbox's
    assert f"with pull request #{pull} at commit `{head[:12]}`" in body and "**fixed" in body
    asked = [r.path for r in sandbox.requests if "/pulls/" in r.path]
    api = f"/repos/{OWNER}/{NAME}/pulls/{pull}"
    # Its files (naming the head), the diff, the files again (the head did not move), and
    # the post's own read of the head.
    assert asked == [f"{api}/files", api, f"{api}/files", f"{api}/files"]


def test_what_does_not_apply_is_outside_src_art_or_over_a_cap_gets_a_one_line_refusal(
    sandbox: TestSandbox, issue: int
) -> None:
    stale = make_diff("src/art/loss.py", "nothing like it\n", "changed\n")
    outside = make_diff("tests/test_loss.py", "a\n", "b\n")
    big = make_diff("src/art/loss.py", "a\n", "x" * MAX_PATCH_BYTES + "\n")
    pull = sandbox.seed_pull(OWNER, NAME, "Touch the tests", outside)
    bodies = [as_comment(stale), as_comment(outside), as_comment(big), f"/artbot test #{pull}"]
    for body in bodies:
        sandbox.seed_comment(OWNER, NAME, issue, body, user=WRITER)
    result = answer(sandbox)
    assert result.exit_code == 0, result.output
    got = answers(sandbox, issue)
    assert len(got) == 4
    shown = [b.split("\n", 1)[1].strip() for b in got]  # after the hidden marker
    assert all("\n" not in s and s.startswith("**artbot test**: not run: ") for s in shown)
    assert "the hunk -1,1 +1,1 does not apply" in shown[0]
    assert "outside src/art/" in shown[1] and "outside src/art/" in shown[3]
    assert "over the cap" in shown[2]
    assert not any(r.path.endswith(f"/pulls/{pull}") for r in sandbox.requests)


def test_an_edit_is_a_new_request_and_a_repeat_gets_a_link(
    sandbox: TestSandbox, issue: int
) -> None:
    stale = as_comment(make_diff("src/art/loss.py", "nothing like it\n", "changed\n"))
    first = sandbox.seed_comment(OWNER, NAME, issue, stale, user=WRITER)
    assert answer(sandbox).exit_code == 0
    sandbox.edit_comment(OWNER, NAME, first, "/artbot test")
    sandbox.seed_comment(OWNER, NAME, issue, stale, user=WRITER)  # the first request again
    result = answer(sandbox)
    assert result.exit_code == 0, result.output
    got = answers(sandbox, issue)
    assert len(got) == 3
    assert "needs a pull request" in got[1]
    assert "the same request was answered before: http" in got[2]
    assert answer(sandbox).exit_code == 0 and len(answers(sandbox, issue)) == 3


def test_the_phases_hand_over_files_and_the_check_needs_no_github(
    sandbox: GitHubSandbox, issue: int, tmp_path: Path
) -> None:
    sandbox.seed_comment(OWNER, NAME, issue, "/artbot test 0.5.23 #999", user=WRITER)
    tasks, done = tmp_path / "tasks.json", tmp_path / "answers.json"
    assert answer(sandbox, "--phase", "read", "--tasks", str(tasks)).exit_code == 0
    before = len(sandbox.requests)
    checked = CliRunner(env={"GH_TOKEN": None, "GITHUB_TOKEN": None}).invoke(
        cli,
        ["--root", str(REPO), "answer-tests", "--phase", "check", "--tasks", str(tasks),
         "--answers", str(done)],
    )  # fmt: skip
    assert checked.exit_code == 0, checked.output
    assert len(sandbox.requests) == before  # the check phase talked to no GitHub
    assert answer(sandbox, "--phase", "post", "--answers", str(done)).exit_code == 0
    [body] = answers(sandbox, issue)
    assert "OpenPipe/ART has no pull request #999" in body


def test_a_marker_in_someone_elses_comment_is_not_believed() -> None:
    forged = Task(1, 801, 10, "2026-12-04T10:00:00Z", "0" * 16, "refuse").marker()
    comments = [
        Comment(10, WRITER, False, "/artbot test", "2026-12-04T10:00:00Z"),
        Comment(11, READER, False, forged, "2026-12-04T10:01:00Z"),
    ]
    [task] = plan(1, 801, comments, [ARTBOT], {WRITER.casefold(): "write"})
    assert task.comment_id == 10 and task.kind == "refuse"
    mine = Comment(12, ARTBOT, True, forged, "2026-12-04T10:02:00Z")
    assert plan(1, 801, [*comments, mine], [ARTBOT], {WRITER.casefold(): "write"}) == []


def test_a_comment_event_names_the_issue_to_answer(
    sandbox: TestSandbox, issue: int, tmp_path: Path
) -> None:
    """As the workflow runs it: `--event $GITHUB_EVENT_PATH`, the issue_comment payload."""
    other = filed(sandbox, 1001)
    stale = as_comment(make_diff("src/art/loss.py", "nothing like it\n", "changed\n"))
    sandbox.seed_comment(OWNER, NAME, other, stale, user=WRITER)
    comment = sandbox.seed_comment(OWNER, NAME, issue, stale, user=WRITER)
    event = tmp_path / "event.json"
    event.write_text(json.dumps(sandbox.comment_event(OWNER, NAME, comment)), encoding="utf-8")
    result = answer(sandbox, "--event", str(event))
    assert result.exit_code == 0, result.output
    assert len(answers(sandbox, issue)) == 1 and answers(sandbox, other) == []
