"""Which ``/artbot test`` comments to answer, and how (pure: comments in, tasks out), by the
README's rules ("Patch testing"): only a writer's comment (an unknown permission is none), never
a bot's or artbot's own, once per comment id and ``updated_at``, at most ``max_runs`` a pass.
What was answered is a hidden marker in artbot's own answers (a marker in anyone else's comment
is not believed).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .command import Refusal, is_command, parse_command

WRITERS = ("admin", "write")
MAX_RUNS = 2
_MARKER_RE = re.compile(
    r"^<!-- artbot:test-answer comment=(\d+) updated=([0-9TZ:+.-]{1,40}) "
    r"request=([0-9a-f]{16}) -->$",
    re.M,
)
Kind = Literal["run", "refuse", "repeat", "busy"]


@dataclass(frozen=True)
class Comment:
    """An issue comment as the list endpoint gives it (the fields planning reads)."""

    id: int
    login: str
    bot: bool
    body: str
    updated_at: str
    html_url: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Comment | None:
        user = data.get("user") if isinstance(data.get("user"), dict) else None
        cid, body, updated = data.get("id"), data.get("body"), data.get("updated_at")
        if user is None or not isinstance(cid, int) or not isinstance(updated, str):
            return None
        login = str(user.get("login") or "")
        bot = user.get("type") == "Bot" or login.endswith("[bot]")
        url = data.get("html_url")
        return cls(cid, login, bot, body or "", updated, url if isinstance(url, str) else None)


@dataclass(frozen=True)
class Task:
    """One answer to post on ``issue``: a test to run, a refusal, a link or the cap."""

    issue: int
    item: int
    comment_id: int
    updated_at: str
    request: str  # the request's key (a hash of what it asks), for repeats
    kind: Kind
    text: str = ""  # the refusal, or the earlier answer's (or request's) address
    release: str | None = None
    pull: int | None = None
    diff: str | None = None
    author: str = ""
    head: str | None = None  # a pull request's head commit, as read with its diff

    def marker(self) -> str:
        return (
            f"<!-- artbot:test-answer comment={self.comment_id} updated={self.updated_at} "
            f"request={self.request} -->"
        )


@dataclass(frozen=True)
class Answered:
    comment_id: int
    updated_at: str
    request: str
    url: str | None


def request_key(body: str) -> str:
    """What a request asks, as a short hash: its command line and diff, whitespace aside."""
    words = " ".join(body.split())
    return hashlib.sha256(words.encode("utf-8")).hexdigest()[:16]


def answered(comments: Iterable[Comment], artbot: Sequence[str]) -> list[Answered]:
    """The requests artbot's own comments say they answered."""
    mine = {login.casefold() for login in artbot}
    out = []
    for c in comments:
        if c.login.casefold() not in mine:
            continue
        for m in _MARKER_RE.finditer(c.body):
            out.append(Answered(int(m[1]), m[2], m[3], c.html_url))
    return out


def candidates(comments: Iterable[Comment], artbot: Sequence[str]) -> list[Comment]:
    """The comments that are requests not yet answered, whoever wrote them (not artbot, not a
    bot): the logins whose permission planning needs."""
    comments = list(comments)
    done = {(a.comment_id, a.updated_at) for a in answered(comments, artbot)}
    mine = {login.casefold() for login in artbot}
    return [
        c
        for c in comments
        if not c.bot
        and c.login.casefold() not in mine
        and (c.id, c.updated_at) not in done
        and is_command(c.body)
    ]


def plan(
    issue: int,
    item: int,
    comments: Sequence[Comment],
    artbot: Sequence[str],
    permissions: Mapping[str, str],
    *,
    max_runs: int = MAX_RUNS,
) -> list[Task]:
    """The answers to post on ``issue`` (item ``item``), oldest request first."""
    earlier = {a.request: a for a in answered(comments, artbot)}
    seen: dict[str, Comment] = {}
    runs = 0
    out = []
    for c in candidates(comments, artbot):
        if permissions.get(c.login.casefold(), "none") not in WRITERS:
            continue
        key = request_key(c.body)

        def task(kind: Kind, text: str = "", c: Comment = c, key: str = key, **more: Any) -> Task:
            return Task(issue, item, c.id, c.updated_at, key, kind, text, author=c.login, **more)

        if key in earlier or key in seen:
            where = earlier[key].url if key in earlier else seen[key].html_url
            out.append(task("repeat", where or ""))
            continue
        seen[key] = c
        parsed = parse_command(c.body)
        if parsed is None:  # is_command said it was one: nothing to answer otherwise
            continue
        if isinstance(parsed, Refusal):
            out.append(task("refuse", parsed.reason))
        elif runs >= max_runs:
            out.append(task("busy", f"{max_runs} tests per run"))
        else:
            runs += 1
            out.append(task("run", release=parsed.release, pull=parsed.pull, diff=parsed.diff))
    return out
