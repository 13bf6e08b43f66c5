"""The sandbox's sub-issue endpoints (GitHub's "REST API endpoints for sub-issues").

As GitHub documents them: list, add (by the sub-issue's id, with ``replace_parent``),
remove, reprioritize (``after_id`` or ``before_id``) and ``GET .../parent``; one parent per
issue (a second parent is a 422 unless ``replace_parent`` is true), at most 100 sub-issues
per parent, the sub-issue in the same owner's repositories. Add, remove and reprioritize
answer with the parent issue; every issue payload carries ``sub_issues_summary`` (see
:mod:`.shapes`). With ``GitHubSandbox(sub_issues=False)`` the sandbox is a GitHub
Enterprise Server without sub-issues: these endpoints answer 404 and issues carry no summary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .routes import _Call, _object, _Reply, _Route, _route, _Routes
from .state import DOCS, _error, _invalid_request, _Issue, _Repo, _validation_failed

MAX_SUB_ISSUES = 100


class _SubIssueRoutes(_Routes):
    """The five sub-issue endpoints, and helpers that act as a person on the web would."""

    def _build_routes(self) -> list[_Route]:
        routes = super()._build_routes()
        if not self.sub_issues_enabled:
            return routes
        issue = "/repos/{owner}/{repo}/issues/{number}"
        subs, s = issue + "/sub_issues", "issues/sub-issues#"
        table: list[tuple[str, str, Callable[[_Call], _Reply], str]] = [
            ("GET", subs, self._list_sub_issues, s + "list-sub-issues"),
            ("POST", subs, self._post_sub_issue, s + "add-sub-issue"),
            ("DELETE", issue + "/sub_issue", self._delete_sub_issue, s + "remove-sub-issue"),
            ("PATCH", subs + "/priority", self._prioritize, s + "reprioritize-sub-issue"),
            ("GET", issue + "/parent", self._get_parent, s + "get-parent-issue"),
        ]  # fmt: skip
        return routes + [_route(m, t, h, f"{DOCS}/{d}") for m, t, h, d in table]

    # endpoints

    def _list_sub_issues(self, call: _Call) -> _Reply:
        _, parent = self._repo_issue(call)
        children = [self._issue_json(r, i, full=False) for r, i in self._sub_issues_of(parent)]
        return self._paginate(call, children)

    def _post_sub_issue(self, call: _Call) -> _Reply:
        repo, parent = self._repo_issue(call)
        body = _object(call)
        child_repo, child = self._sub_issue_arg(body, call.doc)
        replace = body.get("replace_parent", False)
        if not isinstance(replace, bool):
            raise _invalid_request(call.doc, 'For "replace_parent", value is not a boolean.')
        self._attach(repo, parent, child_repo, child, replace, call.doc)
        return _Reply(201, self._issue_json(repo, parent, full=True))

    def _delete_sub_issue(self, call: _Call) -> _Reply:
        repo, parent = self._repo_issue(call)
        _, child = self._sub_issue_arg(_object(call), call.doc)
        if child.id not in parent.sub_issue_ids:
            raise _error(404, "Not Found", call.doc)
        parent.sub_issue_ids.remove(child.id)
        child.parent_id = None
        return _Reply(200, self._issue_json(repo, parent, full=True))

    def _prioritize(self, call: _Call) -> _Reply:
        repo, parent = self._repo_issue(call)
        body = _object(call)
        _, child = self._sub_issue_arg(body, call.doc)
        if child.id not in parent.sub_issue_ids:
            raise _error(404, "Not Found", call.doc)
        after, before = body.get("after_id"), body.get("before_id")
        if (after is None) == (before is None):
            raise _simple_422(call.doc, "Either after_id or before_id must be specified")
        anchor = after if after is not None else before
        if not isinstance(anchor, int) or isinstance(anchor, bool) or anchor == child.id:
            raise _simple_422(call.doc, "The position must be another sub-issue's id")
        if anchor not in parent.sub_issue_ids:
            raise _simple_422(call.doc, f"{anchor} is not a sub-issue of this issue")
        parent.sub_issue_ids.remove(child.id)
        at = parent.sub_issue_ids.index(anchor) + (1 if after is not None else 0)
        parent.sub_issue_ids.insert(at, child.id)
        return _Reply(200, self._issue_json(repo, parent, full=True))

    def _get_parent(self, call: _Call) -> _Reply:
        _, child = self._repo_issue(call)
        found = self._issue_by_id(child.parent_id) if child.parent_id is not None else None
        if found is None or found[1].deleted:
            raise _error(404, "Not Found", call.doc)
        return _Reply(200, self._issue_json(*found, full=True))

    # the rules

    def _sub_issue_arg(self, body: dict[str, Any], doc: str) -> tuple[_Repo, _Issue]:
        if "sub_issue_id" not in body:
            raise _invalid_request(doc, '"sub_issue_id" wasn\'t supplied.')
        value = body["sub_issue_id"]
        if not isinstance(value, int) or isinstance(value, bool):
            raise _invalid_request(doc, 'For "sub_issue_id", value is not an integer.')
        found = self._issue_by_id(value)
        if found is None or found[1].deleted:
            raise _sub_issue_invalid(doc, "The provided sub-issue does not exist")
        return found

    def _attach(
        self, repo: _Repo, parent: _Issue, child_repo: _Repo, child: _Issue, replace: bool, doc: str
    ) -> None:
        if child_repo.owner.casefold() != repo.owner.casefold():
            raise _sub_issue_invalid(doc, "Sub-issue must belong to the same repository owner")
        if child.pull_request:
            raise _sub_issue_invalid(doc, "A pull request cannot be a sub-issue")
        if child is parent or self._is_ancestor(child, parent):
            raise _sub_issue_invalid(doc, "An issue cannot be a sub-issue of itself")
        if child.id in parent.sub_issue_ids:
            raise _sub_issue_invalid(doc, "Issue is already a sub-issue of this issue")
        if child.parent_id is not None and not replace:
            raise _sub_issue_invalid(doc, "Issue may not contain more than one parent issue")
        if len(self._sub_issues_of(parent)) >= MAX_SUB_ISSUES:
            raise _sub_issue_invalid(
                doc, f"Parent issue cannot have more than {MAX_SUB_ISSUES} sub-issues"
            )
        if child.parent_id is not None:
            old = self._issue_by_id(child.parent_id)
            if old is not None:
                old[1].sub_issue_ids.remove(child.id)
        child.parent_id = parent.id
        parent.sub_issue_ids.append(child.id)

    def _is_ancestor(self, issue: _Issue, of: _Issue) -> bool:
        seen: set[int] = set()
        current = of.parent_id
        while current is not None and current not in seen:
            if current == issue.id:
                return True
            seen.add(current)
            found = self._issue_by_id(current)
            current = found[1].parent_id if found else None
        return False

    # helpers for tests and the demo, acting as a person on the web (unlogged)

    def add_sub_issue(self, owner: str, name: str, parent: int, child: int) -> None:
        """Make ``child`` a sub-issue of ``parent`` (same repository), as on the web."""
        with self._lock:
            repo = self._repo_or_raise(owner, name)
            kid = self._issue(repo, child, DOCS)
            self._attach(repo, self._issue(repo, parent, DOCS), repo, kid, False, DOCS)
            self._save()

    def remove_sub_issue(self, owner: str, name: str, parent: int, child: int) -> None:
        """Take ``child`` out of ``parent``'s sub-issues, as a person does on the web."""
        with self._lock:
            repo = self._repo_or_raise(owner, name)
            mother, kid = self._issue(repo, parent, DOCS), self._issue(repo, child, DOCS)
            mother.sub_issue_ids.remove(kid.id)
            kid.parent_id = None
            self._save()

    def sub_issues(self, owner: str, name: str, number: int) -> list[int]:
        """The numbers of ``number``'s sub-issues, in order (sub-issues in this repository)."""
        with self._lock:
            repo = self._repo_or_raise(owner, name)
            return [i.number for _, i in self._sub_issues_of(self._issue(repo, number, DOCS))]


def _sub_issue_invalid(doc: str, message: str) -> Exception:
    return _validation_failed(
        doc, {"resource": "Issue", "code": "invalid", "field": "sub_issue_id", "message": message}
    )


def _simple_422(doc: str, message: str) -> Exception:
    return _error(422, "Validation Failed", doc, errors=[message])
