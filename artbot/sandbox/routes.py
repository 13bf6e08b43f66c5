"""The sandbox's routes: the issue, comment, label, repository and rate-limit endpoints, their
lookups and mutations."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from .shapes import _Shapes
from .state import (
    DEFAULT_PER_PAGE,
    DOCS,
    MAX_BODY_CHARS,
    MAX_PER_PAGE,
    MAX_TITLE_CHARS,
    _Bucket,
    _Comment,
    _error,
    _field_error,
    _int_param,
    _invalid_request,
    _Issue,
    _Label,
    _parse_time,
    _Repo,
    _too_long,
)

# --- request plumbing --------------------------------------------------------------------


@dataclass
class _Call:
    method: str
    path: str
    params: dict[str, str]
    query: dict[str, str]
    body: Any
    login: str | None
    doc: str
    bucket: _Bucket
    accept: str = ""  # the request's Accept header (a media type such as a diff's)


@dataclass
class _Reply:
    status: int
    payload: Any
    headers: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class _Outcome:
    status: int  # 0: drop the connection
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    fault: bool = False  # a failure injected by a test, served instead of the answer


@dataclass
class _Route:
    method: str
    template: str  # the endpoint's path as GitHub's REST docs write it: /repos/{owner}/{repo}
    pattern: re.Pattern[str]
    handler: Callable[[_Call], _Reply]
    doc: str

    def matches(self, method: str, path: str) -> bool:
        return method == self.method and self.pattern.fullmatch(path) is not None


def _route(method: str, template: str, handler: Callable[[_Call], _Reply], doc: str) -> _Route:
    numeric = {"number", "comment_id"}

    def group(m: re.Match[str]) -> str:
        return f"(?P<{m[1]}>\\d+)" if m[1] in numeric else f"(?P<{m[1]}>[^/]+)"

    pattern = re.compile(re.sub(r"\{(\w+)\}", group, template) + "/?")
    return _Route(method, template, pattern, handler, doc)


class _Routes(_Shapes):
    """Route table and handlers; state changes go through the mutations below."""

    def _build_routes(self) -> list[_Route]:
        # (method, path template, handler, the anchor of its page in GitHub's REST docs)
        repo = "/repos/{owner}/{repo}"
        issue = repo + "/issues/{number}"
        comment = repo + "/issues/comments/{comment_id}"
        i, c, lb = "issues/issues#", "issues/comments#", "issues/labels#"
        table: list[tuple[str, str, Callable[[_Call], _Reply], str]] = [
            ("GET", "/rate_limit", self._get_rate_limit, "rate-limit/rate-limit"),
            ("GET", repo, self._get_repo, "repos/repos#get-a-repository"),
            ("GET", repo + "/issues", self._list_issues, i + "list-repository-issues"),
            ("POST", repo + "/issues", self._post_issue, i + "create-an-issue"),
            ("GET", issue, self._get_issue, i + "get-an-issue"),
            ("PATCH", issue, self._patch_issue, i + "update-an-issue"),
            ("PUT", issue + "/lock", self._lock_issue, i + "lock-an-issue"),
            ("DELETE", issue + "/lock", self._unlock_issue, i + "unlock-an-issue"),
            ("GET", issue + "/comments", self._list_comments, c + "list-issue-comments"),
            ("POST", issue + "/comments", self._post_comment, c + "create-an-issue-comment"),
            ("GET", comment, self._get_comment, c + "get-an-issue-comment"),
            ("PATCH", comment, self._patch_comment, c + "update-an-issue-comment"),
            ("GET", issue + "/labels", self._list_issue_labels, lb + "list-labels-for-an-issue"),
            ("POST", issue + "/labels", self._add_issue_labels, lb + "add-labels-to-an-issue"),
            ("GET", repo + "/labels", self._list_labels, lb + "list-labels-for-a-repository"),
            ("POST", repo + "/labels", self._post_label, lb + "create-a-label"),
            ("GET", repo + "/labels/{name}", self._get_label, lb + "get-a-label"),
        ]  # fmt: skip
        return [_route(m, t, h, f"{DOCS}/{d}") for m, t, h, d in table]

    def _get_rate_limit(self, call: _Call) -> _Reply:
        core = call.bucket.as_json()
        search = {"limit": 30, "remaining": 30, "reset": core["reset"], "used": 0}
        graphql = {**core, "used": 0, "remaining": core["limit"]}
        resources = {"core": core, "search": search, "graphql": graphql}
        return _Reply(200, {"resources": resources, "rate": core})

    def _get_repo(self, call: _Call) -> _Reply:
        return _Reply(200, self._repo_json(self._repo(call), authenticated=call.login is not None))

    def _list_issues(self, call: _Call) -> _Reply:
        repo, q = self._repo(call), call.query
        state = q.get("state", "open")
        sort = q.get("sort", "created")
        direction = q.get("direction", "desc")
        for name, value, allowed in (
            ("state", state, ("open", "closed", "all")),
            ("sort", sort, ("created", "updated", "comments")),
            ("direction", direction, ("asc", "desc")),
        ):
            if value not in allowed:
                raise _field_error(call.doc, "Search", name, "invalid")
        wanted = {x.strip().casefold() for x in q.get("labels", "").split(",") if x.strip()}
        since = self._since(call)
        issues = []
        for issue in repo.issues.values():
            names = {repo.labels[i].name.casefold() for i in issue.label_ids}
            if (
                issue.deleted
                or (state != "all" and issue.state != state)
                or not wanted <= names
                or (since is not None and _parse_time(issue.updated_at) < since)
            ):
                continue
            issues.append(issue)
        key: Callable[[_Issue], tuple[Any, int]] = {
            "created": lambda i: (i.created_at, i.number),
            "updated": lambda i: (i.updated_at, i.number),
            "comments": lambda i: (i.comments, i.number),
        }[sort]
        issues.sort(key=key, reverse=direction == "desc")
        return self._paginate(call, [self._issue_json(repo, i, full=False) for i in issues])

    def _post_issue(self, call: _Call) -> _Reply:
        repo = self._repo(call)
        issue = self._create_issue(repo, _object(call), call.login or self.login, call.doc)
        data = self._issue_json(repo, issue, full=True)
        return _Reply(201, data, [("Location", data["url"])])

    def _get_issue(self, call: _Call) -> _Reply:
        repo, issue = self._repo_issue(call)
        return _Reply(200, self._issue_json(repo, issue, full=True))

    def _lock_issue(self, call: _Call) -> _Reply:
        repo, issue = self._repo_issue(call)
        reason = (call.body or {}).get("lock_reason") if isinstance(call.body, dict) else None
        if reason not in (None, "off-topic", "too heated", "resolved", "spam"):
            raise _field_error(call.doc, "Issue", "lock_reason", "invalid")
        issue.locked, issue.lock_reason = True, reason
        return _Reply(204, None)

    def _unlock_issue(self, call: _Call) -> _Reply:
        repo, issue = self._repo_issue(call)
        issue.locked, issue.lock_reason = False, None
        return _Reply(204, None)

    def _patch_issue(self, call: _Call) -> _Reply:
        repo, issue = self._repo_issue(call)
        self._edit_issue(repo, issue, _object(call), call.login or self.login, call.doc)
        return _Reply(200, self._issue_json(repo, issue, full=True))

    def _list_comments(self, call: _Call) -> _Reply:
        repo, issue = self._repo_issue(call)
        since = self._since(call)
        comments = [
            self._comment_json(repo, c)
            for c in sorted(repo.comments.values(), key=lambda c: c.id)
            if c.issue_number == issue.number
            and (since is None or _parse_time(c.updated_at) >= since)
        ]
        return self._paginate(call, comments)

    def _post_comment(self, call: _Call) -> _Reply:
        repo, issue = self._repo_issue(call)
        comment = self._add_comment(repo, issue, _object(call), call.login or self.login, call.doc)
        data = self._comment_json(repo, comment)
        return _Reply(201, data, [("Location", data["url"])])

    def _get_comment(self, call: _Call) -> _Reply:
        repo = self._repo(call)
        return _Reply(200, self._comment_json(repo, self._comment(repo, call)))

    def _patch_comment(self, call: _Call) -> _Reply:
        repo = self._repo(call)
        comment = self._comment(repo, call)
        body = _comment_body(_object(call), call.doc)
        if body != comment.body:
            comment.body = body
            comment.updated_at = self._later(comment.updated_at)
        return _Reply(200, self._comment_json(repo, comment))

    def _list_issue_labels(self, call: _Call) -> _Reply:
        repo, issue = self._repo_issue(call)
        return self._paginate(call, self._labels_json(repo, issue.label_ids))

    def _add_issue_labels(self, call: _Call) -> _Reply:
        repo, issue = self._repo_issue(call)
        names = [repo.labels[i].name for i in issue.label_ids] + _label_list(call.body, call.doc)
        self._edit_issue(repo, issue, {"labels": names}, call.login or self.login, call.doc)
        return _Reply(200, self._labels_json(repo, issue.label_ids))

    def _list_labels(self, call: _Call) -> _Reply:
        repo = self._repo(call)
        return self._paginate(call, self._labels_json(repo, list(repo.labels)))

    def _post_label(self, call: _Call) -> _Reply:
        repo = self._repo(call)
        body = _object(call)
        if "name" not in body:
            raise _invalid_request(call.doc, '"name" wasn\'t supplied.')
        name = self._label_name(repo, body["name"], call.doc)
        color = str(body.get("color", "ededed")).removeprefix("#").lower()
        if not re.fullmatch(r"[0-9a-f]{6}", color):
            raise _field_error(call.doc, "Label", "color", "invalid")
        description = body.get("description")
        if description is not None and len(str(description)) > 100:
            raise _too_long(call.doc, "Label", "description", 100)
        label = _Label(self._new_id(), name, color, description)
        repo.labels[label.id] = label
        data = self._label_json(repo, label)
        return _Reply(201, data, [("Location", data["url"])])

    def _get_label(self, call: _Call) -> _Reply:
        repo = self._repo(call)
        return _Reply(200, self._label_json(repo, self._label(repo, call)))

    # lookups

    def _repo_or_raise(self, owner: str, name: str) -> _Repo:
        repo = self._repos.get(f"{owner}/{name}".casefold())
        if repo is None:
            raise KeyError(f"no repository {owner}/{name} in the sandbox; call create_repo first")
        return repo

    def _repo(self, call: _Call) -> _Repo:
        repo = self._repos.get(f"{call.params['owner']}/{call.params['repo']}".casefold())
        if repo is None:
            raise _error(404, "Not Found", call.doc)
        return repo

    def _repo_issue(self, call: _Call) -> tuple[_Repo, _Issue]:
        repo = self._repo(call)
        return repo, self._issue(repo, int(call.params["number"]), call.doc)

    def _issue(self, repo: _Repo, number: int, doc: str) -> _Issue:
        issue = repo.issues.get(number)
        if issue is None:
            raise _error(404, "Not Found", doc)
        if issue.deleted:
            raise _error(410, "This issue was deleted", doc)
        return issue

    def _comment(self, repo: _Repo, call: _Call) -> _Comment:
        comment = repo.comments.get(int(call.params["comment_id"]))
        if comment is None:
            raise _error(404, "Not Found", call.doc)
        return comment

    def _label(self, repo: _Repo, call: _Call) -> _Label:
        label = repo.label_named(call.params["name"])
        if label is None:
            raise _error(404, "Not Found", call.doc)
        return label

    def _since(self, call: _Call) -> datetime | None:
        value = call.query.get("since")
        if value is None:
            return None
        try:
            return _parse_time(value)
        except ValueError:
            raise _field_error(call.doc, "Search", "since", "invalid") from None

    # mutations

    def _create_issue(self, repo: _Repo, body: Mapping[str, Any], user: str, doc: str) -> _Issue:
        if "title" not in body:
            raise _invalid_request(doc, '"title" wasn\'t supplied.')
        now = self._stamp()
        issue = _Issue(self._new_id(), repo.next_number, "", None, user, now, now)
        # Validate by editing a draft first, so a rejected create leaves no trace.
        self._edit_issue(repo, issue, body, user, doc, new=True)
        repo.next_number += 1
        repo.issues[issue.number] = issue
        return issue

    def _edit_issue(
        self,
        repo: _Repo,
        issue: _Issue,
        body: Mapping[str, Any],
        actor: str,
        doc: str,
        new: bool = False,
    ) -> None:
        """Validate every change first, then apply them together; bump updated_at if any."""
        changes: dict[str, Any] = {}
        if "title" in body:
            title = body["title"]
            if not isinstance(title, (str, int)) or isinstance(title, bool):
                raise _invalid_request(doc, 'For "title", value is not a string or integer.')
            if not str(title).strip():
                raise _field_error(doc, "Issue", "title", "missing_field")
            if len(str(title)) > MAX_TITLE_CHARS:
                raise _too_long(doc, "Issue", "title", MAX_TITLE_CHARS)
            changes["title"] = str(title)
        if "body" in body:
            text = body["body"]
            if text is not None and not isinstance(text, str):
                raise _invalid_request(doc, 'For "body", value is not a string or null.')
            if text is not None and len(text) > MAX_BODY_CHARS:
                raise _too_long(doc, "Issue", "body", MAX_BODY_CHARS)
            changes["body"] = text
        label_names = _label_list(body["labels"], doc) if "labels" in body else None
        for name in label_names or []:
            if repo.label_named(name) is None:
                self._label_name(repo, name, doc)
        assignees = body.get("assignees")
        if assignees is None and body.get("assignee") is not None:
            assignees = [body["assignee"]]
        if assignees is not None or "assignee" in body:
            if not isinstance(assignees or [], list) or not all(
                isinstance(a, str) for a in assignees or []
            ):
                raise _invalid_request(doc, 'For "assignees", value is not an array of strings.')
            changes["assignees"] = list(dict.fromkeys(assignees or []))
        if body.get("milestone") not in (None, ""):
            # The sandbox has no milestones, so any milestone number is unknown.
            raise _field_error(doc, "Issue", "milestone", "invalid")
        state = body.get("state", issue.state)
        reason = body.get("state_reason")
        if state not in ("open", "closed"):
            raise _invalid_request(doc, f'For "state", {state!r} is not one of open, closed.')
        if reason not in (None, "completed", "not_planned", "duplicate", "reopened"):
            raise _invalid_request(doc, f'For "state_reason", {reason!r} is not a valid reason.')
        now_closed = state == "closed"
        if now_closed and issue.state == "open":
            changes.update(state="closed", state_reason=reason or "completed", closed_by=actor)
        elif not now_closed and issue.state == "closed":
            changes.update(state="open", state_reason="reopened", closed_at=None, closed_by=None)
        elif now_closed and reason not in (None, "reopened"):
            changes["state_reason"] = reason
        if label_names is not None:  # only now, so a rejected edit creates no labels
            changes["label_ids"] = self._label_ids(repo, label_names)
        changed = {k: v for k, v in changes.items() if getattr(issue, k) != v}
        if not changed:
            return
        for key, value in changed.items():
            setattr(issue, key, value)
        if not new:
            issue.updated_at = self._later(issue.updated_at)
        if changed.get("state") == "closed":
            issue.closed_at = issue.updated_at

    def _add_comment(
        self, repo: _Repo, issue: _Issue, body: Mapping[str, Any], user: str, doc: str = DOCS
    ) -> _Comment:
        text = _comment_body(body, doc)
        now = self._stamp()
        comment = _Comment(self._new_id(), issue.number, text, user, now, now)
        repo.comments[comment.id] = comment
        issue.comments += 1
        issue.updated_at = self._later(issue.updated_at)
        return comment

    def _label_ids(self, repo: _Repo, names: list[str]) -> list[int]:
        # Like GitHub, naming a label that does not exist yet creates it.
        ids: list[int] = []
        for name in names:
            label = repo.label_named(name)
            if label is None:
                label = _Label(self._new_id(), name.strip(), "ededed", None)
                repo.labels[label.id] = label
            if label.id not in ids:
                ids.append(label.id)
        return ids

    def _label_name(self, repo: _Repo, name: Any, doc: str) -> str:
        if not isinstance(name, str) or not name.strip():
            raise _field_error(doc, "Label", "name", "missing_field")
        name = name.strip()
        if len(name) > 50:
            raise _too_long(doc, "Label", "name", 50)
        if repo.label_named(name) is not None:
            raise _field_error(doc, "Label", "name", "already_exists")
        return name

    def _paginate(self, call: _Call, items: list[Any]) -> _Reply:
        per_page = _int_param(call.query.get("per_page"), DEFAULT_PER_PAGE)
        per_page = DEFAULT_PER_PAGE if per_page < 1 else min(per_page, MAX_PER_PAGE)
        page = max(_int_param(call.query.get("page"), 1), 1)
        last = max(math.ceil(len(items) / per_page), 1)

        def link(number: int, rel: str) -> str:
            query = urlencode({**call.query, "page": str(number)})
            return f'<{self.api_url}{call.path}?{query}>; rel="{rel}"'

        links = [link(page - 1, "prev")] if page > 1 else []
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links.append(link(1, "first"))
        headers = [("Link", ", ".join(links))] if links else []
        return _Reply(200, items[(page - 1) * per_page : page * per_page], headers)


def _object(call: _Call) -> dict[str, Any]:
    if call.body is None:
        return {}
    if not isinstance(call.body, dict):
        raise _invalid_request(call.doc, "Body must be a JSON object.")
    return call.body


def _label_list(value: Any, doc: str) -> list[str]:
    """Label names from a list of names or of {"name": ...} objects, or {"labels": [...]}."""
    if isinstance(value, dict) and "labels" in value:
        value = value["labels"]
    if value is None:
        return []
    if not isinstance(value, list):
        raise _invalid_request(doc, 'For "labels", value is not an array.')
    names = [x.get("name") if isinstance(x, dict) else x for x in value]
    if not all(isinstance(x, str) for x in names):
        raise _invalid_request(doc, 'For "labels", items must be strings or {"name": ...}.')
    return [str(x) for x in names]


def _comment_body(body: Mapping[str, Any], doc: str) -> str:
    if "body" not in body:
        raise _invalid_request(doc, '"body" wasn\'t supplied.')
    text = body["body"]
    if not isinstance(text, str):
        raise _invalid_request(doc, 'For "body", value is not a string.')
    if not text.strip():
        raise _field_error(doc, "IssueComment", "body", "missing_field")
    if len(text) > MAX_BODY_CHARS:
        raise _too_long(doc, "IssueComment", "body", MAX_BODY_CHARS)
    return text
