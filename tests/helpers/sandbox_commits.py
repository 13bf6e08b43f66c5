"""Commits for the tests' sandbox (tests/helpers/testsandbox.py): the read-only endpoints
``artbot verify changes`` asks about ART.

As GitHub documents them (REST "commits" and "pulls" pages): compare two refs
(``GET .../compare/{base}...{head}``: the commits after ``base`` up to ``head``, oldest first,
and the files they change), list commits (``?sha=`` and ``?path=``, newest first, paginated),
get one commit (with each file's ``patch``), and the pull requests that brought a commit in
(``GET .../commits/{sha}/pulls``). An unknown ref is a 404, as GitHub answers it.

History is linear, per repository, and in memory only (it is not written to the state file):
tests seed it with :meth:`CommitHistory.seed_commit` and :meth:`CommitHistory.seed_tag`.
A ref is a tag, ``main`` (the newest commit), or a commit's sha or a prefix of at least 7.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from artbot.sandbox import GitHubSandbox
from artbot.sandbox.routes import _Call, _Reply, _Route, _route
from artbot.sandbox.state import DOCS, _error, _node_id


@dataclass
class _Commit:
    sha: str
    message: str
    files: dict[str, str]  # path -> unified diff of the change to it
    pulls: list[tuple[int, str]] = field(default_factory=list)  # (number, title)
    parent: str | None = None
    date: str = ""


@dataclass
class _History:
    commits: list[_Commit] = field(default_factory=list)  # oldest first
    tags: dict[str, str] = field(default_factory=dict)  # tag -> sha


class CommitHistory(GitHubSandbox):
    """The sandbox with compare, list commits, get a commit and a commit's pull requests; and
    their seeding."""

    _commit_histories: dict[str, _History]  # by repository, casefolded

    def _init_state(self, *args: Any, **kwargs: Any) -> None:
        super()._init_state(*args, **kwargs)
        self._commit_histories = {}  # reset() forgets them with the rest of the state

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
        return routes + [_route(m, t, h, f"{DOCS}/{d}") for m, t, h, d in table]

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
        basehead, web = call.params["basehead"], self._web(call)
        head_sha = history.commits[end].sha
        owner = call.params["owner"]
        return _Reply(
            200,
            {
                "url": f"{self._repo_api_of(call)}/compare/{basehead}",
                "html_url": f"{web}/compare/{basehead}",
                "permalink_url": f"{web}/compare/{owner}:{history.commits[start].sha}"
                f"...{owner}:{head_sha}",
                "diff_url": f"{web}/compare/{basehead}.diff",
                "patch_url": f"{web}/compare/{basehead}.patch",
                "status": "ahead" if end > start else "identical" if end == start else "behind",
                "ahead_by": max(end - start, 0),
                "behind_by": max(start - end, 0),
                "total_commits": len(between),
                "base_commit": self._commit_json(call, history.commits[start]),
                "merge_base_commit": self._commit_json(call, history.commits[min(start, end)]),
                "commits": [self._commit_json(call, c) for c in between],
                "files": [self._file_json(call, head_sha, p, d) for p, d in files.items()],
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
        data["files"] = [self._file_json(call, commit.sha, p, d) for p, d in commit.files.items()]
        added = sum(f["additions"] for f in data["files"])
        removed = sum(f["deletions"] for f in data["files"])
        data["stats"] = {"total": added + removed, "additions": added, "deletions": removed}
        return _Reply(200, data)

    def _commit_pulls(self, call: _Call) -> _Reply:
        history = self._history_of(call)
        commit = history.commits[self._index(history, call.params["ref"], call)]
        pulls = [self._pull_json(call, commit, number, title) for number, title in commit.pulls]
        return self._paginate(call, pulls)

    # lookups

    def _history_of(self, call: _Call) -> _History:
        repo = self._repo(call)  # 404 for an unknown repository
        return self._commit_histories.get(f"{repo.owner}/{repo.name}".casefold(), _History())

    def _seeded_history(self, owner: str, name: str) -> _History:
        repo = self._repo_or_raise(owner, name)
        return self._commit_histories.setdefault(f"{repo.owner}/{repo.name}".casefold(), _History())

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

    def _repo_api_of(self, call: _Call) -> str:
        return f"{self.api_url}/repos/{call.params['owner']}/{call.params['repo']}"

    def _commits_api(self, call: _Call) -> str:
        return f"{self._repo_api_of(call)}/commits"

    def _commit_json(self, call: _Call, commit: _Commit) -> dict[str, Any]:
        # As GitHub has it for a commit whose e-mail address is no GitHub user's: the git
        # author and committer, no GitHub "author" or "committer", and an unsigned commit.
        api, web, sha = self._commits_api(call), self._web(call), commit.sha
        tree = hashlib.sha1(f"tree {sha}".encode()).hexdigest()
        person = {"name": "ART maintainer", "email": "maintainer@example.com", "date": commit.date}
        parents = [commit.parent] if commit.parent else []
        unsigned = {"verified": False, "reason": "unsigned", "signature": None, "payload": None}
        return {
            "sha": sha,
            "node_id": _node_id("C", "Commit", int(sha[:12], 16)),
            "commit": {
                "author": person,
                "committer": person,
                "message": commit.message,
                "tree": {"sha": tree, "url": f"{self._repo_api_of(call)}/git/trees/{tree}"},
                "url": f"{self._repo_api_of(call)}/git/commits/{sha}",
                "comment_count": 0,
                "verification": {**unsigned, "verified_at": None},
            },
            "url": f"{api}/{sha}",
            "html_url": f"{web}/commit/{sha}",
            "comments_url": f"{api}/{sha}/comments",
            "author": None,
            "committer": None,
            "parents": [
                {"sha": p, "url": f"{api}/{p}", "html_url": f"{web}/commit/{p}"} for p in parents
            ],
        }

    def _file_json(self, call: _Call, sha: str, path: str, patch: str) -> dict[str, Any]:
        added = sum(1 for line in patch.splitlines() if line.startswith("+"))
        removed = sum(1 for line in patch.splitlines() if line.startswith("-"))
        web, quoted = self._web(call), quote(path)
        return {
            "sha": hashlib.sha1(f"blob {sha} {path}".encode()).hexdigest(),
            "filename": path,
            "status": "modified",
            "additions": added,
            "deletions": removed,
            "changes": added + removed,
            "blob_url": f"{web}/blob/{sha}/{quoted}",
            "raw_url": f"{web}/raw/{sha}/{quoted}",
            "contents_url": f"{self._repo_api_of(call)}/contents/{quoted}?ref={sha}",
            "patch": patch,
        }

    def _pull_json(self, call: _Call, commit: _Commit, number: int, title: str) -> dict[str, Any]:
        """A merged pull request as ``GET .../commits/{sha}/pulls`` lists it (PullRequestSimple)."""
        api, web = self._repo_api_of(call), self._web(call)
        repo = self._repo(call)
        owner = self._user_json(repo.owner, "Organization")
        pull, html = f"{api}/pulls/{number}", f"{web}/pull/{number}"
        links = {
            "self": pull, "html": html, "issue": f"{api}/issues/{number}",
            "comments": f"{api}/issues/{number}/comments",
            "review_comments": f"{pull}/comments",
            "review_comment": f"{api}/pulls/comments{{/number}}",
            "commits": f"{pull}/commits", "statuses": f"{api}/statuses/{commit.sha}",
        }  # fmt: skip
        repo_json = self._repo_json(repo, authenticated=False)
        for key in ("subscribers_count", "network_count"):  # not in a pull request's repository
            repo_json.pop(key)

        def end(ref: str, sha: str) -> dict[str, Any]:
            return {"label": f"{repo.owner}:{ref}", "ref": ref, "repo": repo_json, "sha": sha,
                    "user": owner}  # fmt: skip

        return {
            "url": pull, "id": self._user_id(f"pull {api} {number}"),  # any stable number
            "node_id": _node_id("PR", "PullRequest", number),
            "html_url": html, "diff_url": f"{html}.diff", "patch_url": f"{html}.patch",
            **{f"{k}_url": links[k] for k in ("issue", "commits", "review_comments")},
            **{f"{k}_url": links[k] for k in ("review_comment", "comments", "statuses")},
            "number": number, "state": "closed", "locked": False, "title": title,
            "user": self._user_json(repo.owner), "body": None, "labels": [], "milestone": None,
            "active_lock_reason": None, "created_at": commit.date, "updated_at": commit.date,
            "closed_at": commit.date, "merged_at": commit.date, "merge_commit_sha": commit.sha,
            "assignee": None, "assignees": [], "requested_reviewers": [], "requested_teams": [],
            "head": end(f"fix-{number}", commit.sha),
            "base": end("main", commit.parent or commit.sha),
            "_links": {k: {"href": v} for k, v in links.items()},
            "author_association": "MEMBER", "auto_merge": None, "draft": False,
        }  # fmt: skip

    # seeding, acting on state directly (unlogged)

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
            history = self._seeded_history(owner, name)
            parent = history.commits[-1].sha if history.commits else None
            digest = hashlib.sha1(f"{parent or ''}\n{message}\n{sorted(files.items())}".encode())
            commit = _Commit(
                sha or digest.hexdigest(),
                message,
                dict(files),
                list(pulls or []),
                parent,
                self._stamp(),
            )
            history.commits.append(commit)
            return commit.sha

    def seed_tag(self, owner: str, name: str, tag: str, sha: str) -> None:
        """Point tag ``tag`` at commit ``sha``."""
        with self._lock:
            history = self._seeded_history(owner, name)
            history.tags[tag] = sha
