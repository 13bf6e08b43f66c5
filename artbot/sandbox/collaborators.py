"""The sandbox's collaborator permission endpoint (``GET .../collaborators/{username}/permission``).

As GitHub answers it: ``permission`` is the legacy level (``admin``, ``write``, ``read`` or
``none``; a ``maintain`` role reads as ``write`` and ``triage`` as ``read``), ``role_name``
the role itself, ``user`` the collaborator, with the role again and the ``permissions`` flags it
grants. The repository's owner is ``admin`` and the sandbox's own login ``write``; any other
login is ``read`` (a public repository) unless :meth:`_CollaboratorRoutes.set_permission` gave
it a role. Roles are kept in memory only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .routes import _Call, _Reply, _Route, _route, _Routes
from .state import DOCS, _error

ROLES = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read"}
# A collaborator's ``permissions`` flags, weakest first: a role grants its flag and every weaker.
_GRANTS = ("pull", "triage", "push", "maintain", "admin")
_FLAG = dict(admin="admin", maintain="maintain", write="push", triage="triage", read="pull")


class _CollaboratorRoutes(_Routes):
    """``GET /repos/{owner}/{repo}/collaborators/{username}/permission``."""

    _roles: dict[tuple[str, str], str]

    def _build_routes(self) -> list[_Route]:
        routes = super()._build_routes()
        path = "/repos/{owner}/{repo}/collaborators/{username}/permission"
        doc = f"{DOCS}/collaborators/collaborators#get-repository-permissions-for-a-user"
        table: list[tuple[str, str, Callable[[_Call], _Reply]]] = [
            ("GET", path, self._get_permission),
        ]
        return routes + [_route(m, t, h, doc) for m, t, h in table]

    def set_permission(self, owner: str, name: str, login: str, role: str | None) -> None:
        """Give ``login`` a role on ``owner/name`` (None: back to the default)."""
        if role is not None and role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
        with self._lock:
            repo = self._repo_or_raise(owner, name)
            roles = self._roles
            key = (f"{repo.owner}/{repo.name}".casefold(), login.casefold())
            if role is None:
                roles.pop(key, None)
            else:
                roles[key] = role

    def _get_permission(self, call: _Call) -> _Reply:
        repo = self._repo(call)
        login = call.params["username"]
        if call.login is None:
            raise _error(401, "Requires authentication", call.doc)
        role = self._roles.get((f"{repo.owner}/{repo.name}".casefold(), login.casefold()))
        if role is None:
            if login.casefold() == repo.owner.casefold():
                role = "admin"
            elif login == self.login:
                role = "write"
            else:
                role = "read"
        # GitHub repeats the role inside ``user``, with the permissions it grants.
        granted = _GRANTS[: _GRANTS.index(_FLAG[role]) + 1]
        permissions = {p: p in granted for p in _GRANTS}
        user = {**self._user_json(login), "permissions": permissions, "role_name": role}
        payload: dict[str, Any] = {"permission": ROLES[role], "role_name": role, "user": user}
        return _Reply(200, payload)
