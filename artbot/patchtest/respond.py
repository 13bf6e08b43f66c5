"""The ``/artbot test`` responder, in three phases that a workflow runs in three jobs:

1. :func:`read_requests` (GitHub read access; runs no ART code): the issues artbot filed, their
   comments, each candidate's permission, then :func:`.plan.plan`; a pull request's files and
   diff are fetched here (capped). Out: tasks, as JSON.
2. :func:`check_tasks` (no token): each test run (:mod:`.trial`, ART's code confined) and
   every answer rendered, with its hidden marker. Out: answers, as JSON.
3. :func:`post_answers` (``issues: write``; runs nothing): each answer posted once, after a
   fresh read shows no answer with its marker yet (two runs racing post one answer).

All GitHub I/O goes through the adapter (:class:`artbot.github.client.GitHubRepo`).
"""

from __future__ import annotations

import json
import os
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Protocol

from ..errors import BadInput, RemoteError
from ..records.catalog import Catalog
from ..records.models import ACTIONS_BOT
from ..records.observed import ObservedIssue
from .answer import TITLE, render_refusal, render_trial
from .command import MAX_FILES, MAX_PATCH_BYTES, Refusal, checked_diff
from .diff import SOURCE_ROOT
from .handover import CHECKED, Answer, trial_from_json, trial_json
from .plan import MAX_RUNS, Comment, Task, candidates, plan
from .trial import TimedOut, newest_checked, run_trial

# Who artbot writes as where GET /user does not say (an Actions run's GITHUB_TOKEN).


class Repo(Protocol):
    full_name: str

    def list_issues(self, labels: list[str]) -> list[ObservedIssue]: ...
    def list_comments(self, number: int) -> list[dict[str, Any]]: ...
    def permission(self, login: str) -> str: ...
    def pull_files(self, repository: str, number: int) -> list[dict[str, Any]]: ...
    def pull_diff(self, repository: str, number: int, max_bytes: int) -> str: ...
    def post_comment(self, number: int, body: str) -> str | None: ...


def artbot_logins(login: str | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(x for x in (login, ACTIONS_BOT) if x))


def read_requests(
    repo: Repo,
    catalog: Catalog,
    artbot: Sequence[str],
    *,
    issue: int | None = None,
    max_runs: int = MAX_RUNS,
    pulls: bool = True,
) -> list[Task]:
    """Phase 1: the answers due on artbot's issues (only #``issue`` when given); with
    ``pulls``, a pull request's diff and head commit read into its task."""
    audit = catalog.audit
    mine = {a.casefold() for a in artbot}
    tasks: list[Task] = []
    for observed in repo.list_issues(list(audit.labels)):
        marker = observed.marker
        if marker is None or marker.audit != audit.commit or observed.pull_request:
            continue
        if observed.author is not None and observed.author.casefold() not in mine:
            continue  # a marker in someone else's issue is not artbot's issue
        if issue is not None and observed.number != issue:
            continue
        comments = [c for c in map(Comment.from_json, repo.list_comments(observed.number)) if c]
        logins = {c.login.casefold() for c in candidates(comments, artbot)}
        permissions = {login: _permission(repo, login) for login in sorted(logins)}
        found = plan(observed.number, marker.item, comments, artbot, permissions, max_runs=max_runs)
        tasks += [_with_pull(repo, audit.repository, t) if pulls else t for t in found]
    return tasks


def _permission(repo: Repo, login: str) -> str:
    """The login's permission; any failure to learn it is "none" (fails closed)."""
    try:
        return repo.permission(login)
    except RemoteError:
        return "none"


def head_of(files: Sequence[dict[str, Any]]) -> str | None:
    """The head commit a pull request's file list was read at: GitHub names it in each
    file's ``contents_url`` (``?ref=SHA``); None unless every file names the same one."""
    refs = set()
    for entry in files:
        query = urllib.parse.urlparse(str(entry.get("contents_url", ""))).query
        refs.add(next(iter(urllib.parse.parse_qs(query).get("ref", [])), None))
    head = refs.pop() if len(refs) == 1 else None
    return head if head and len(head) == 40 and all(c in "0123456789abcdef" for c in head) else None


def pull_head(repo: Repo, repository: str, number: int) -> str | None:
    """Pull request #number's head commit now (None when it cannot be read)."""
    try:
        return head_of(repo.pull_files(repository, number))
    except (RemoteError, BadInput):
        return None


def _with_pull(repo: Repo, repository: str, task: Task) -> Task:
    """A pull request's diff fetched into its task, with the head commit it is (refused when
    over a cap or outside src/art/, judged from its files before the diff is read, or when
    the head moved while it was read)."""
    if task.kind != "run" or task.pull is None:
        return task
    try:
        files = repo.pull_files(repository, task.pull)
        if len(files) > MAX_FILES:
            why = f"pull request #{task.pull} changes {len(files)} files"
            return replace(task, kind="refuse", text=f"{why}, over the cap of {MAX_FILES}")
        names = [str(f.get("filename", "")) for f in files]
        if outside := [n for n in names if not n.startswith(SOURCE_ROOT)]:
            why = f"pull request #{task.pull} changes {outside[0][:80]}, outside {SOURCE_ROOT}"
            return replace(task, kind="refuse", text=why)
        head = head_of(files)
        diff = repo.pull_diff(repository, task.pull, MAX_PATCH_BYTES)
        if head is None or pull_head(repo, repository, task.pull) != head:
            why = f"pull request #{task.pull}'s head commit could not be pinned (it moved?)"
            return replace(task, kind="refuse", text=f"{why}; ask again")
    except BadInput as exc:
        return replace(task, kind="refuse", text=str(exc))
    except RemoteError as exc:
        if exc.status == 404:
            why = f"{repository} has no pull request #{task.pull}"
            return replace(task, kind="refuse", text=why)
        raise
    return replace(task, diff=diff, head=head)


def check_tasks(
    catalog: Catalog,
    tasks: Sequence[Task],
    *,
    cache: Path | None = None,
    secrets: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
    budget_s: float | None = None,
    on_answer: Callable[[Answer], None] | None = None,
) -> list[Answer]:
    """Phase 2: every task's answer, as fields (tests run confined, without a token), each
    handed to ``on_answer`` as soon as it is known (the caller writes them one by one).
    ``budget_s`` bounds the whole run: each test gets an equal share of what is left, and a
    test that runs over its share is answered "timed out" (it counts as answered)."""
    deadline = None if budget_s is None else time.monotonic() + budget_s
    runs = sum(1 for t in tasks if t.kind == "run")
    out = []
    for task in tasks:
        if task.kind == "run":
            share = None
            if deadline is not None:
                share = time.monotonic() + max(0.0, deadline - time.monotonic()) / max(runs, 1)
            runs -= 1
            answer = _checked(catalog, task, cache, secrets, progress, share)
        else:
            answer = Answer(task.issue, task.comment_id, task.updated_at, task.request,
                            task.kind, reason=task.text)  # fmt: skip
        out.append(answer)
        if on_answer is not None:
            on_answer(answer)
    return out


def _checked(
    catalog: Catalog,
    task: Task,
    cache: Path | None,
    secrets: Sequence[str],
    progress: Callable[[str], None] | None,
    deadline: float | None,
) -> Answer:
    def answer(kind: str, **fields: Any) -> Answer:
        return Answer(task.issue, task.comment_id, task.updated_at, task.request, kind,
                      head=task.head, **fields)  # fmt: skip

    release = task.release or newest_checked(catalog.root)
    parsed = checked_diff(task.diff or "", release, task.pull)
    if isinstance(parsed, Refusal):
        return answer("refusal", reason=parsed.reason)
    started = time.monotonic()
    try:
        outcome = run_trial(
            catalog, task.item, parsed.files, release, source=source_of(task), cache=cache,
            secrets=secrets, progress=progress, deadline=deadline,
        )  # fmt: skip
    except TimedOut:
        return answer("timed out", seconds=time.monotonic() - started)
    if isinstance(outcome, Refusal):
        return answer("refusal", reason=outcome.reason)
    return answer("trial", trial=trial_json(outcome))


def source_of(task: Task) -> str:
    """What the patch was: the comment's diff, or the pull request at the commit tested."""
    if task.pull is None:
        return "the comment's diff"
    return f"pull request #{task.pull} at commit `{(task.head or 'unknown')[:12]}`"


NOT_OURS = "not a writer's unanswered request on one of artbot's issues (read again)"


def post_answers(
    repo: Repo,
    catalog: Catalog,
    answers: Sequence[Answer],
    artbot: Sequence[str],
    say: Callable[[str], None] | None = None,
) -> list[str]:
    """Phase 3: each answer posted, trusting nothing of the check job's: GitHub is read
    again (the request must still be a writer's unanswered ``/artbot test`` on one of
    artbot's own issues, at the same edit and request), and the text is rendered here from
    the answer's validated fields and that fresh read. The addresses of those posted."""
    say = say or (lambda _: None)
    posted = []
    for answer in answers:
        fresh = {
            (t.comment_id, t.updated_at): t
            for t in read_requests(repo, catalog, artbot, issue=answer.issue,
                                   max_runs=len(answers) + MAX_RUNS, pulls=False)
        }  # fmt: skip
        task = fresh.get((answer.comment_id, answer.updated_at))
        if task is None or task.request != answer.request or task.issue != answer.issue:
            say(f"answer-tests: comment {answer.comment_id} on #{answer.issue}: {NOT_OURS}")
            continue
        try:
            text = _render(repo, catalog, task, answer)
        except (ValueError, TypeError, KeyError) as exc:
            say(f"answer-tests: comment {answer.comment_id}: the answer is not valid: {exc}")
            continue
        if text is None:
            continue
        posted.append(repo.post_comment(task.issue, f"{task.marker()}\n{text}") or f"#{task.issue}")
    return posted


def _render(repo: Repo, catalog: Catalog, task: Task, answer: Answer) -> str | None:
    """The answer's text, from the fresh task and the answer's validated fields."""
    if task.kind == "repeat":
        return f"{TITLE}: the same request was answered before: {task.text}"
    if task.kind == "refuse":
        return render_refusal(Refusal(task.text))
    if answer.kind == "refuse" and task.pull is not None:  # refused as its pull was read
        return render_refusal(Refusal(answer.reason))
    if answer.kind == "busy":
        return render_refusal(Refusal(f"over the cap of {MAX_RUNS} tests per run; ask again later"))
    if task.kind != "run" or answer.kind not in CHECKED:
        return None
    if task.pull is not None:  # the head the answer speaks of must still be the head
        head = pull_head(repo, catalog.audit.repository, task.pull)
        if answer.head is None or head != answer.head:
            return render_refusal(Refusal(
                f"pull request #{task.pull} moved from commit {(answer.head or '?')[:12]} "
                f"to {(head or '?')[:12]} while it was tested; this answer vouches for "
                "neither: ask again"
            ))  # fmt: skip
        task = replace(task, head=head)
    if answer.kind == "refusal":
        return render_refusal(Refusal(answer.reason))
    if answer.kind == "timed out":
        return (
            f"{TITLE}: timed out: the test ran {answer.seconds:.0f} s, over its share of the "
            "run's time; it is not run again (edit the comment to ask again)."
        )
    assert answer.trial is not None
    release = task.release or newest_checked(catalog.root)
    trial = trial_from_json(answer.trial, catalog, item=task.item, release=release,
                            source=source_of(task))  # fmt: skip
    return render_trial(trial, catalog.get(task.item))


def dump(items: Sequence[Task] | Sequence[Answer], path: Path) -> None:
    """``items`` as JSON in ``path``, replaced whole (a job killed meanwhile leaves the last
    complete file)."""
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps([asdict(i) for i in items], indent=1), encoding="utf-8")
    os.replace(part, path)


def event_issue(path: Path) -> int:
    """The issue number of an ``issue_comment`` event's payload (a pull request's is refused:
    artbot's requests are on its issues)."""
    [entry] = _entries(path, single=True)
    issue = entry.get("issue")
    number = issue.get("number") if isinstance(issue, dict) else None
    if not isinstance(number, int) or "comment" not in entry:
        raise BadInput(f"{path}: not an issue_comment event (no issue number, no comment)")
    if isinstance(issue, dict) and issue.get("pull_request"):
        raise BadInput(f"{path}: a comment on a pull request, not on one of artbot's issues")
    return number


def load_tasks(path: Path) -> list[Task]:
    return [Task(**entry) for entry in _entries(path)]


def _entries(path: Path, *, single: bool = False) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BadInput(f"{path}: {exc}") from None
    if single:
        data = [data]
    if not isinstance(data, list) or not all(isinstance(e, dict) for e in data):
        raise BadInput(f"{path}: expected a list of objects")
    return data
