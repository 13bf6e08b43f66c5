"""The sandbox's issue reaction endpoints (``POST`` and ``DELETE .../issues/{n}/reactions``).

As GitHub answers them: a new reaction is 201 with the reaction (its ``user`` is the token's
login: how artbot learns who an installation token writes as, when ``GET /user`` refuses it);
the same login's same reaction again is 200 with the one already there; deleting is 204.
Reactions are kept in memory only, and are not counted in an issue's ``reactions`` summary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .routes import _Call, _Reply, _Route, _route, _Routes
from .state import DOCS, _error, _node_id

CONTENTS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")


class _ReactionRoutes(_Routes):
    """``POST /repos/{owner}/{repo}/issues/{number}/reactions`` and its ``DELETE``."""

    # (repository, issue number) -> reaction id -> (login, content, created_at)
    _issue_reactions: dict[tuple[str, int], dict[int, tuple[str, str, str]]]

    def _build_routes(self) -> list[_Route]:
        routes = super()._build_routes()
        path = "/repos/{owner}/{repo}/issues/{number}/reactions"
        doc = f"{DOCS}/reactions/reactions"
        table: list[tuple[str, str, Callable[[_Call], _Reply]]] = [
            ("POST", path, self._post_reaction),
            ("DELETE", path + "/{reaction_id}", self._delete_reaction),
        ]
        return routes + [_route(m, t, h, doc) for m, t, h in table]

    def _reaction_json(self, rid: int, login: str, content: str, at: str) -> dict[str, Any]:
        return {
            "id": rid,
            "node_id": _node_id("REA", "Reaction", rid),
            "user": self._user_json(login),
            "content": content,
            "created_at": at,
        }

    def _post_reaction(self, call: _Call) -> _Reply:
        repo, issue = self._repo_issue(call)
        body = call.body if isinstance(call.body, dict) else {}
        content = body.get("content")
        if content not in CONTENTS:
            raise _error(422, "Validation Failed", call.doc)
        login = call.login or self.login
        with self._lock:
            mine = self._issue_reactions.setdefault((f"{repo.owner}/{repo.name}", issue.number), {})
            for rid, (who, what, at) in mine.items():
                if (who, what) == (login, content):
                    return _Reply(200, self._reaction_json(rid, who, what, at))
            rid = 1000 + sum(len(r) for r in self._issue_reactions.values())
            while any(rid in r for r in self._issue_reactions.values()):
                rid += 1
            at = self._stamp()
            mine[rid] = (login, content, at)
        return _Reply(201, self._reaction_json(rid, login, content, at))

    def _delete_reaction(self, call: _Call) -> _Reply:
        repo, issue = self._repo_issue(call)
        mine = self._issue_reactions.get((f"{repo.owner}/{repo.name}", issue.number), {})
        try:
            rid = int(call.params["reaction_id"])
        except ValueError:
            raise _error(404, "Not Found", call.doc) from None
        with self._lock:
            mine.pop(rid, None)
        return _Reply(204, None)

    def reactions_on(self, owner: str, name: str, number: int) -> list[tuple[str, str]]:
        """The (login, content) of each reaction on issue ``number`` now."""
        with self._lock:
            found = self._issue_reactions.get((f"{owner}/{name}", number), {})
            return [(who, what) for who, what, _ in found.values()]
