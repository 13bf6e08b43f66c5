"""Pull requests for the tests' sandbox (tests/helpers/testsandbox.py), read-only: a pull
request's diff and its files, what ``/artbot test #N`` fetches; and the comment events a
workflow on ``issue_comment`` receives.

As GitHub documents them (REST "pulls" page): ``GET /repos/{owner}/{repo}/pulls/{pull_number}``
with ``Accept: application/vnd.github.diff`` answers the unified diff as text (``git diff``'s
output); ``GET .../pulls/{pull_number}/files`` lists the files it changes (a ``DiffEntry``
each: status, additions, deletions, ``patch``). The pull request's JSON form is not served
(artbot never asks for it): without the diff media type the answer is a 406. Pull requests
are issues too (one numbering); their diffs are kept in memory only, seeded by
:meth:`PullRequests.seed_pull`. :meth:`PullRequests.comment_event` is the ``issue_comment``
event GitHub would deliver for a comment, and :meth:`PullRequests.edit_comment` edits one as its
author would (a new ``updated_at``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from artbot.sandbox import GitHubSandbox
from artbot.sandbox.routes import _Call, _Reply, _Route, _route
from artbot.sandbox.state import DOCS, _error

DIFF_MEDIA_TYPE = "application/vnd.github.diff"
_FILE_RE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)


@dataclass(frozen=True)
class RawText:
    """A reply's body that is not JSON (a diff): sent as ``content_type``."""

    text: str
    content_type: str = "text/plain; charset=utf-8"


def diff_files(diff: str) -> list[tuple[str, str, str]]:
    """(path, status, patch) for each ``diff --git`` section of ``diff``."""
    starts = [m.start() for m in _FILE_RE.finditer(diff)]
    out = []
    for start, end in zip(starts, [*starts[1:], len(diff)], strict=True):
        section = diff[start:end]
        head = _FILE_RE.match(section)
        assert head is not None
        status = "modified"
        if "\nnew file mode" in section or "\n--- /dev/null" in section:
            status = "added"
        elif "\ndeleted file mode" in section or "\n+++ /dev/null" in section:
            status = "removed"
        at = section.find("\n@@")
        out.append((head[2], status, section[at + 1 :] if at >= 0 else ""))
    return out


class PullRequests(GitHubSandbox):
    """The sandbox with ``GET .../pulls/{pull_number}`` (the diff media type) and
    ``.../files``; their seeding, and a comment's event and edit."""

    _pull_diffs: dict[tuple[str, int], str]

    def _init_state(self, *args: Any, **kwargs: Any) -> None:
        super()._init_state(*args, **kwargs)
        self._pull_diffs = {}  # reset() forgets them with the rest of the state

    def _build_routes(self) -> list[_Route]:
        routes = super()._build_routes()
        pull = "/repos/{owner}/{repo}/pulls/{pull_number}"
        p = f"{DOCS}/pulls/pulls#"
        table: list[tuple[str, str, Callable[[_Call], _Reply], str]] = [
            ("GET", pull, self._get_pull, p + "get-a-pull-request"),
            ("GET", pull + "/files", self._list_pull_files, p + "list-pull-requests-files"),
        ]
        return routes + [_route(m, t, h, d) for m, t, h, d in table]

    def seed_pull(
        self, owner: str, name: str, title: str, diff: str, user: str = "contributor"
    ) -> int:
        """A pull request by ``user`` whose change is ``diff`` (``git diff``'s text)."""
        number = self.seed_issue(owner, name, title, None, pull_request=True, user=user)
        with self._lock:
            self._pull_diffs[(f"{owner}/{name}".casefold(), number)] = diff
        return number

    def push_pull(self, owner: str, name: str, number: int, diff: str) -> None:
        """A push to pull request #number: its change is now ``diff`` (a new head)."""
        with self._lock:
            self._pull_diffs[(f"{owner}/{name}".casefold(), number)] = diff

    def edit_comment(self, owner: str, name: str, comment_id: int, body: str) -> None:
        """Edit a comment as its author would: a new body and ``updated_at``."""
        with self._lock:
            repo = self._repo_or_raise(owner, name)
            comment = repo.comments[comment_id]
            comment.body = body
            comment.updated_at = self._later(comment.updated_at)
            self._save()

    def comment_event(
        self, owner: str, name: str, comment_id: int, action: str = "created"
    ) -> dict[str, Any]:
        """The ``issue_comment`` event's payload for a comment (the fields a workflow reads:
        action, issue, comment, repository, sender)."""
        with self._lock:
            repo = self._repo_or_raise(owner, name)
            comment = repo.comments[comment_id]
            issue = self._issue(repo, comment.issue_number, DOCS)
            return {
                "action": action,
                "issue": self._issue_json(repo, issue, full=True),
                "comment": self._comment_json(repo, comment),
                "repository": self._repo_json(repo, authenticated=False),
                "sender": self._user_json(comment.user),
            }

    def _encode(self, payload: Any) -> tuple[bytes, str]:
        if isinstance(payload, RawText):
            return payload.text.encode("utf-8"), payload.content_type
        return super()._encode(payload)

    def _diff_of(self, call: _Call) -> str:
        repo = self._repo(call)
        number = call.params["pull_number"]
        diff = self._pull_diffs.get(
            (f"{repo.owner}/{repo.name}".casefold(), int(number)) if number.isdigit() else ("", 0)
        )
        if diff is None:
            raise _error(404, "Not Found", call.doc)
        return diff

    def _get_pull(self, call: _Call) -> _Reply:
        diff = self._diff_of(call)
        if DIFF_MEDIA_TYPE not in call.accept:
            raise _error(406, "the sandbox serves a pull request as its diff only", call.doc)
        return _Reply(200, RawText(diff))

    def _list_pull_files(self, call: _Call) -> _Reply:
        diff = self._diff_of(call)
        repo = self._repo(call)
        web = f"{self.api_url}/{repo.owner}/{repo.name}"
        contents = f"{self.api_url}/repos/{repo.owner}/{repo.name}/contents"
        # The head commit, as GitHub names it in each file's URLs (here: the diff's hash, so
        # a push that changes the diff moves it).
        head = hashlib.sha1(diff.encode(), usedforsecurity=False).hexdigest()
        files = []
        for path, status, patch in diff_files(diff):
            added = sum(1 for ln in patch.splitlines() if ln.startswith("+"))
            removed = sum(1 for ln in patch.splitlines() if ln.startswith("-"))
            sha = hashlib.sha1(patch.encode(), usedforsecurity=False).hexdigest()
            files.append(
                {
                    "sha": sha,
                    "filename": path,
                    "status": status,
                    "additions": added,
                    "deletions": removed,
                    "changes": added + removed,
                    "blob_url": f"{web}/blob/{head}/{path}",
                    "raw_url": f"{web}/raw/{head}/{path}",
                    "contents_url": f"{contents}/{path}?ref={head}",
                    "patch": patch,
                }
            )
        return self._paginate(call, files)
