"""#53: a hostile patch (or request) attacks `/artbot test`, and each attack, run for real
through the trial or the responder, holds."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.patchtest.answer import render_trial
from artbot.patchtest.plan import request_key
from artbot.verify.code import CodeStatus
from tests.helpers.answering import (
    FIXTURES,
    READER,
    REPO,
    WRITER,
    answer,
    answers,
    filed,
    live,
    trial,
)
from tests.helpers.patchdiff import RELEASE, as_comment, make_diff
from tests.helpers.sandbox_client import NAME, OWNER, client
from tests.helpers.testsandbox import TestSandbox
from tests.helpers.wheels import default_wheels

LOSS = "src/art/loss.py"


@pytest.fixture
def issue(sandbox: TestSandbox) -> int:
    """Item 801's issue, filed by artbot; WRITER may write."""
    sandbox.create_repo(OWNER, NAME)
    sandbox.set_permission(OWNER, NAME, WRITER, "write")
    return filed(sandbox, 801)


pytestmark = pytest.mark.network

LINKS = "see https://evil.example/x www.evil.example #12 octo/repo#3 @someone"
LIVE = re.compile(r"https?://|www\.|#\d|@\w")


def test_links_and_references_a_patch_writes_are_dead_in_the_answer() -> None:
    """Attack 9: the answer kept bare URLs, ``www.`` addresses and ``#N`` / ``owner/repo#N``
    references live; now every text of the patch's is in a code span."""
    source = (default_wheels().package(RELEASE) / "loss.py").read_text(encoding="utf-8")
    head, sep, rest = source.partition("\nclass ")
    hostile = f"{head}\nraise RuntimeError({LINKS!r})\n{sep}{rest}"
    got = trial(801, make_diff("src/art/loss.py", source, hostile))
    assert got.after.status is CodeStatus.could_not_run and "evil.example" in got.after.detail
    answer = render_trial(got)
    assert "evil.example" in answer  # shown, quoted
    assert not LIVE.search(live(answer)), live(answer)


def client_comments(sandbox: TestSandbox, *numbers: int) -> list[dict[str, Any]]:
    """The comments on each of ``numbers``, as GitHub lists them (id, updated_at)."""
    gh = client(sandbox)
    try:
        repo = gh.get_repo(f"{OWNER}/{NAME}")
        return [c.raw_data for n in numbers for c in repo.get_issue(n).get_comments()]
    finally:
        gh.close()


def _phases(sandbox: TestSandbox, folder: Path, *check: str) -> tuple[Path, Path]:
    """The workflow's read and check jobs (the check with no token): their files."""
    tasks, done = folder / "tasks.json", folder / "answers.json"
    assert answer(sandbox, "--phase", "read", "--tasks", str(tasks)).exit_code == 0
    checked = CliRunner(env={"GH_TOKEN": None, "GITHUB_TOKEN": None}).invoke(
        cli,
        ["--root", str(REPO), "answer-tests", "--phase", "check", "--tasks", str(tasks),
         "--answers", str(done), *check],
    )  # fmt: skip
    assert checked.exit_code == 0, checked.output
    return tasks, done


def test_sleeping_patches_are_answered_timed_out_within_the_runs_budget(
    sandbox: TestSandbox, issue: int, tmp_path: Path
) -> None:
    """Attack 5: two sleeping patches outlasted the workflow: no answer was written, and every
    later run planned the same requests again. Now each gets its share of the budget, is
    answered "timed out", and a later run plans nothing."""
    source = (default_wheels().package(RELEASE) / "loss.py").read_text(encoding="utf-8")
    for n in range(2):
        asleep = f"import time\ntime.sleep(1000 + {n})\n" + source
        sandbox.seed_comment(OWNER, NAME, issue, as_comment(make_diff(LOSS, source, asleep)),
                             user=WRITER)  # fmt: skip
    started = time.monotonic()
    tasks, done = _phases(sandbox, tmp_path, "--budget-s", "24")
    assert time.monotonic() - started < 24 + 30
    assert [a["kind"] for a in json.loads(done.read_text())] == ["timed out", "timed out"]
    assert answer(sandbox, "--phase", "post", "--answers", str(done)).exit_code == 0
    got = answers(sandbox, issue)
    assert len(got) == 2 and all("timed out" in body for body in got)
    assert answer(sandbox, "--phase", "read", "--tasks", str(tasks)).exit_code == 0
    assert json.loads(tasks.read_text()) == []  # answered: not planned again


def test_the_post_job_posts_nothing_the_check_job_invents(
    sandbox: TestSandbox, issue: int, tmp_path: Path
) -> None:
    """Attack 6: the post job posted whatever answers.json said: an arbitrary body, on an
    issue artbot does not own, for a comment that was no request (artifact poisoning)."""
    request = "/artbot test 0.5.23 #999"
    theirs = sandbox.seed_issue(OWNER, NAME, "someone else's issue", "hello", user=READER)
    targets = [
        (theirs, sandbox.seed_comment(OWNER, NAME, theirs, request, user=WRITER), request),
        (issue, sandbox.seed_comment(OWNER, NAME, issue, "thanks!", user=WRITER), "thanks!"),
        (issue, sandbox.seed_comment(OWNER, NAME, issue, request, user=READER), request),
    ]
    comments = {c["id"]: c for c in client_comments(sandbox, issue, theirs)}
    forged: list[dict[str, object]] = [
        {"issue": number, "comment_id": cid, "updated_at": comments[cid]["updated_at"],
         "request": request_key(body), "kind": "refusal", "reason": "POISON"}
        for number, cid, body in targets
    ]  # fmt: skip
    forged.append({**forged[0], "issue": issue, "body": "POISON"})  # a field it never reads
    done = tmp_path / "answers.json"
    done.write_text(json.dumps(forged), encoding="utf-8")
    result = answer(sandbox, "--phase", "post", "--answers", str(done))
    assert result.exit_code == 0, result.output
    assert not any(r.method == "POST" for r in sandbox.requests), result.output
    assert result.output.count("not a writer's unanswered request") == 3
    assert "entry 3 dropped" in result.output


def test_an_answer_names_the_head_it_tested_and_vouches_for_nothing_once_it_moved(
    sandbox: TestSandbox, issue: int, tmp_path: Path
) -> None:
    """Attack 10: `/artbot test #PR` answered "fixed" without naming the commit it tested,
    and a later push kept the vouching answer."""
    fix = (FIXTURES / "item801_fix.diff").read_text(encoding="utf-8")
    pull = sandbox.seed_pull(OWNER, NAME, "Treat a stale old logprob as missing", fix)
    sandbox.seed_comment(OWNER, NAME, issue, f"/artbot test #{pull}", user=WRITER)
    _, done = _phases(sandbox, tmp_path)
    [handed] = json.loads(done.read_text())
    assert handed["kind"] == "trial" and handed["head"]
    sandbox.push_pull(OWNER, NAME, pull, fix + "\n")  # a push: another head
    assert answer(sandbox, "--phase", "post", "--answers", str(done)).exit_code == 0
    [body] = answers(sandbox, issue)
    assert f"moved from commit {handed['head'][:12]}" in body and "vouches for neither" in body
    assert "**fixed" not in body
