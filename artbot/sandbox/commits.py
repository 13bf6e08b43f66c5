"""The sandbox's read-only commit endpoints: what ``artbot verify changes`` asks about ART.

As GitHub documents them (REST "commits" and "pulls" pages): compare two refs
(``GET .../compare/{base}...{head}``: the commits after ``base`` up to ``head``, oldest first,
and the files they change), list commits (``?sha=`` and ``?path=``, newest first, paginated),
get one commit (with each file's ``patch``), and the pull requests that brought a commit in
(``GET .../commits/{sha}/pulls``). An unknown ref is a 404, as GitHub answers it.

History is linear, per repository, and in memory only (it is not written to the state file):
tests seed it with :meth:`_CommitRoutes.seed_commit` and :meth:`_CommitRoutes.seed_tag`.
A ref is a tag, ``main`` (the newest commit), or a commit's sha or a prefix of at least 7.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .routes import _Call, _Reply, _Route, _route_pattern
from .state import DOCS, _error
from .subissues import _SubIssueRoutes


@dataclass
class _Commit:
    sha: str
    message: str
    files: dict[str, str]  # path -> unified diff of the change to it
    pulls: list[tuple[int, str]] = field(default_factory=list)  # (number, title)


@dataclass
class _History:
    commits: list[_Commit] = field(default_factory=list)  # oldest first
    tags: dict[str, str] = field(default_factory=dict)  # tag -> sha


class _CommitRoutes(_SubIssueRoutes):
    """compare, list commits, get a commit, a commit's pull requests; and their seeding."""

    def _build_routes(self) -> list[_Route]:
        routes = super()._build_routes()
        repo, c = "/repos/{owner}/{repo}", "commits/commits#"
        table: list[tuple[str, str, Callable[[_Call], _Reply], str]] = [
            ("GET", repo + "/compare/{basehead}", self._compare, c + "compare-two-commits"),
            ("GET", repo + "/commits", self._list_commits, c + "list-commits"),
            ("GET", repo + "/commits/{ref}", self._get_commit, c + "get-a-commit"),
            (
                "GET",
                repo + "/commits/{ref}/pulls",
                self._commit_pulls,
                c + "list-pull-requests-associated-with-a-commit",
            ),
        ]
        return routes + [_Route(m, _route_pattern(t), h, f"{DOCS}/{d}") for m, t, h, d in table]

    # endpoints

    def _compare(self, call: _Call) -> _Reply:
        history = self._history_of(call)
        base, sep, head = call.params["basehead"].partition("...")
        if not sep:
            raise _error(404, "Not Found", call.doc)
        start, end = self._index(history, base, call), self._index(history, head, call)
        between = history.commits[start + 1 : end + 1] if end > start else []
        files: dict[str, str] = {}
        for commit in between:
            files.update(commit.files)
        return _Reply(
            200,
            {
                "url": f"{self._commits_api(call)}/../compare/{call.params['basehead']}",
                "html_url": f"{self._web(call)}/compare/{call.params['basehead']}",
                "status": "ahead" if end > start else "identical" if end == start else "behind",
                "ahead_by": max(end - start, 0),
                "behind_by": max(start - end, 0),
                "total_commits": len(between),
                "base_commit": self._commit_json(call, history.commits[start]),
                "merge_base_commit": self._commit_json(call, history.commits[min(start, end)]),
                "commits": [self._commit_json(call, c) for c in between],
                "files": [_file_json(p, d) for p, d in files.items()],
            },
        )

    def _list_commits(self, call: _Call) -> _Reply:
        history = self._history_of(call)
        ref = call.query.get("sha", "main")
        end = self._index(history, ref, call)
        path = call.query.get("path")
        chosen = [c for c in history.commits[: end + 1] if path is None or path in c.files]
        return self._paginate(call, [self._commit_json(call, c) for c in reversed(chosen)])

    def _get_commit(self, call: _Call) -> _Reply:
        history = self._history_of(call)
        commit = history.commits[self._index(history, call.params["ref"], call)]
        data = self._commit_json(call, commit)
        data["files"] = [_file_json(p, d) for p, d in commit.files.items()]
        return _Reply(200, data)

    def _commit_pulls(self, call: _Call) -> _Reply:
        history = self._history_of(call)
        commit = history.commits[self._index(history, call.params["ref"], call)]
        web = self._web(call)
        pulls = [
            {
                "number": number,
                "title": title,
                "state": "closed",
                "html_url": f"{web}/pull/{number}",
                "url": f"{self._commits_api(call)}/../pulls/{number}",
                "merge_commit_sha": commit.sha,
            }
            for number, title in commit.pulls
        ]
        return self._paginate(call, pulls)

    # lookups

    def _histories(self) -> dict[str, _History]:
        found = self.__dict__.get("_commit_histories")
        if found is None:
            found = self.__dict__["_commit_histories"] = {}
        return found  # type: ignore[no-any-return]

    def _history_of(self, call: _Call) -> _History:
        repo = self._repo(call)  # 404 for an unknown repository
        return self._histories().get(f"{repo.owner}/{repo.name}".casefold(), _History())

    def _index(self, history: _History, ref: str, call: _Call) -> int:
        if ref == "main" and history.commits:
            return len(history.commits) - 1
        sha = history.tags.get(ref, ref)
        if re.fullmatch(r"[0-9a-f]{7,40}", sha):
            for i, commit in enumerate(history.commits):
                if commit.sha.startswith(sha):
                    return i
        raise _error(404, f"No commit found for SHA: {ref}", call.doc)

    def _web(self, call: _Call) -> str:
        return f"{self.api_url}/{call.params['owner']}/{call.params['repo']}"

    def _commits_api(self, call: _Call) -> str:
        return f"{self.api_url}/repos/{call.params['owner']}/{call.params['repo']}/commits"

    def _commit_json(self, call: _Call, commit: _Commit) -> dict[str, Any]:
        return {
            "sha": commit.sha,
            "url": f"{self._commits_api(call)}/{commit.sha}",
            "html_url": f"{self._web(call)}/commit/{commit.sha}",
            "commit": {"message": commit.message},
        }

    # helpers for tests, acting on state directly (unlogged)

    def seed_commit(
        self,
        owner: str,
        name: str,
        message: str,
        files: Mapping[str, str],
        *,
        pulls: list[tuple[int, str]] | None = None,
        sha: str | None = None,
    ) -> str:
        """Append a commit changing ``files`` (path -> unified diff); returns its sha (``sha``,
        40 hex digits, or one derived from the content)."""
        with self._lock:
            repo = self._repo_or_raise(owner, name)
            history = self._histories().setdefault(
                f"{repo.owner}/{repo.name}".casefold(), _History()
            )
            parent = history.commits[-1].sha if history.commits else ""
            digest = hashlib.sha1(f"{parent}\n{message}\n{sorted(files.items())}".encode())
            commit = _Commit(sha or digest.hexdigest(), message, dict(files), list(pulls or []))
            history.commits.append(commit)
            return commit.sha

    def seed_tag(self, owner: str, name: str, tag: str, sha: str) -> None:
        """Point tag ``tag`` at commit ``sha``."""
        with self._lock:
            repo = self._repo_or_raise(owner, name)
            history = self._histories().setdefault(
                f"{repo.owner}/{repo.name}".casefold(), _History()
            )
            history.tags[tag] = sha


def _file_json(path: str, patch: str) -> dict[str, Any]:
    added = sum(1 for line in patch.splitlines() if line.startswith("+"))
    removed = sum(1 for line in patch.splitlines() if line.startswith("-"))
    return {
        "filename": path,
        "status": "modified",
        "additions": added,
        "deletions": removed,
        "changes": added + removed,
        "patch": patch,
    }
