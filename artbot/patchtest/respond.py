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
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from ..errors import BadInput, RemoteError
from ..records.catalog import Catalog
from ..records.models import ACTIONS_BOT, ObservedIssue
from .answer import TITLE, render_refusal, render_trial
from .command import MAX_FILES, MAX_PATCH_BYTES, Refusal, checked_diff
from .diff import SOURCE_ROOT
from .plan import MAX_RUNS, Comment, Task, answered, candidates, plan
from .trial import newest_checked, run_trial

# Who artbot writes as where GET /user does not say (an Actions run's GITHUB_TOKEN).


class Repo(Protocol):
    full_name: str

    def list_issues(self, labels: list[str]) -> list[ObservedIssue]: ...
    def list_comments(self, number: int) -> list[dict[str, Any]]: ...
    def permission(self, login: str) -> str: ...
    def pull_files(self, repository: str, number: int) -> list[dict[str, Any]]: ...
    def pull_diff(self, repository: str, number: int, max_bytes: int) -> str: ...
    def post_comment(self, number: int, body: str) -> str | None: ...


@dataclass(frozen=True)
class Answer:
    issue: int
    comment_id: int
    updated_at: str
    body: str  # with its marker


def artbot_logins(login: str | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(x for x in (login, ACTIONS_BOT) if x))


def read_requests(
    repo: Repo,
    catalog: Catalog,
    artbot: Sequence[str],
    *,
    issue: int | None = None,
    max_runs: int = MAX_RUNS,
) -> list[Task]:
    """Phase 1: the answers due on artbot's issues (only #``issue`` when given)."""
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
        tasks += [_with_pull(repo, audit.repository, t) for t in found]
    return tasks


def _permission(repo: Repo, login: str) -> str:
    """The login's permission; any failure to learn it is "none" (fails closed)."""
    try:
        return repo.permission(login)
    except RemoteError:
        return "none"


def _with_pull(repo: Repo, repository: str, task: Task) -> Task:
    """A pull request's diff fetched into its task (refused when over a cap or outside
    src/art/, judged from its files before the diff is read)."""
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
        diff = repo.pull_diff(repository, task.pull, MAX_PATCH_BYTES)
    except BadInput as exc:
        return replace(task, kind="refuse", text=str(exc))
    except RemoteError as exc:
        if exc.status == 404:
            why = f"{repository} has no pull request #{task.pull}"
            return replace(task, kind="refuse", text=why)
        raise
    return replace(task, diff=diff)


def check_tasks(
    catalog: Catalog,
    tasks: Sequence[Task],
    *,
    cache: Path | None = None,
    secrets: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> list[Answer]:
    """Phase 2: every task's answer, rendered (tests run confined, without a token)."""
    return [
        Answer(
            t.issue,
            t.comment_id,
            t.updated_at,
            f"{t.marker()}\n{_text(catalog, t, cache, secrets, progress)}",
        )
        for t in tasks
    ]


def _text(
    catalog: Catalog,
    task: Task,
    cache: Path | None,
    secrets: Sequence[str],
    progress: Callable[[str], None] | None,
) -> str:
    if task.kind == "repeat":
        return f"{TITLE}: the same request was answered before: {task.text}"
    if task.kind in ("busy", "refuse"):
        why = f"over the cap of {task.text}; ask again later" if task.kind == "busy" else task.text
        return render_refusal(Refusal(why))
    release = task.release or newest_checked(catalog.root)
    parsed = checked_diff(task.diff or "", release, task.pull)
    if isinstance(parsed, Refusal):
        return render_refusal(parsed)
    source = f"pull request #{task.pull}" if task.pull is not None else "the comment's diff"
    outcome = run_trial(
        catalog, task.item, parsed.files, release, source=source, cache=cache, secrets=secrets,
        progress=progress,
    )  # fmt: skip
    return render_refusal(outcome) if isinstance(outcome, Refusal) else render_trial(outcome)


def post_answers(repo: Repo, answers: Sequence[Answer], artbot: Sequence[str]) -> list[str]:
    """Phase 3: each answer posted unless one with its marker is already there; the
    addresses of those posted."""
    posted = []
    for answer in answers:
        comments = [c for c in map(Comment.from_json, repo.list_comments(answer.issue)) if c]
        done = {(a.comment_id, a.updated_at) for a in answered(comments, artbot)}
        if (answer.comment_id, answer.updated_at) in done:
            continue
        posted.append(repo.post_comment(answer.issue, answer.body) or f"#{answer.issue}")
    return posted


def dump(items: Sequence[Task] | Sequence[Answer], path: Path) -> None:
    path.write_text(json.dumps([asdict(i) for i in items], indent=1), encoding="utf-8")


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


def load_answers(path: Path) -> list[Answer]:
    return [Answer(**entry) for entry in _entries(path)]


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
