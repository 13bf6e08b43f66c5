"""Carry out a sync's status changes: one comment each, and, by choice, closing what is fixed.

A status change is commented on once (the comment carries the status it states, so a re-run
after a crash posts no second one). With ``close_when_fixed: true`` in ``findings/audit.yaml``
a change to "every claim fixed" closes the issue as completed, right after that one comment
(which names the release and the fixing lines) and before the body's status table is
updated: a crash after the comment leaves the old status in the body, so the re-run plans the
change again, finds the comment and closes. Only an issue artbot filed is ever closed, and
only on a status change: an issue a person reopens stays open.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jinja2

from ..catalog import Catalog
from ..errors import BadInput
from ..github.repo import Repo
from ..models import ObservedIssue
from ..render import environment, render_status_comment
from ..status import ItemStatus, load_status
from ..status.view import StatusView
from .plan import CloseWhenFixed, Comment, StatusChange, status_comment


def fix_lines(status: ItemStatus | None, release: str) -> list[str]:
    """The fixing lines the record shows at ``release``: ``path:line[-end]`` (look for ...)."""
    if status is None:
        return []
    point = next((p for p in status.releases() if p.label == release), None)
    out: list[str] = []
    for result in point.claims.values() if point else ():
        for line in result.fix.lines if result.fix else ():
            span = f"{line.line}-{line.end}" if line.end and line.end != line.line else line.line
            text = f"`{line.path}:{span}`"
            if line.look_for:
                text += f", look for `{line.look_for.replace('`', chr(39))}`"
            if text not in out:
                out.append(text)
    return out


def render_close_comment(
    view: StatusView, lines: Sequence[str], audit: Any, templates_dir: Path
) -> str:
    """The one comment posted when ``close_when_fixed`` closes an issue."""
    try:
        template = environment(templates_dir).get_template("close_comment.md.j2")
        return template.render(status=view, fix_lines=list(lines), audit=audit)
    except jinja2.TemplateError as exc:
        raise BadInput(f"templates: {type(exc).__name__}: {exc}") from exc


def carry_out_status_change(
    repo: Repo,
    catalog: Catalog,
    action: StatusChange,
    view: StatusView,
    issue: ObservedIssue,
    *,
    closing: bool,
    done: Callable[[str], None],
) -> None:
    """One comment for ``action`` (unless it is there already): the close comment when
    ``closing``, else the status comment."""
    templates = catalog.root / "templates"
    if closing and view.fixed_in:
        lines = fix_lines(load_status(catalog.root, action.item), view.fixed_in)
        text = render_close_comment(view, lines, catalog.audit, templates)
    else:
        text = render_status_comment(view, issue.state, catalog.audit, templates)
    bodies = [c.get("body") or "" for c in repo.list_comments(action.issue)]
    comment = status_comment(action, bodies, text)
    if comment is not None:
        repo.comment(comment.issue, comment.body)
        done(f"item {action.item}: commented on #{action.issue} (status)")


def close_fixed(repo: Repo, action: CloseWhenFixed, done: Callable[[str], None]) -> ObservedIssue:
    """Close the issue as completed (the comment before it says why)."""
    closed = repo.edit_issue(action.issue, state="closed", state_reason="completed")
    done(f"item {action.item}: closed #{action.issue} as completed (fixed in {action.fixed_in})")
    return closed


def observe_comments(
    repo: Repo, issues: dict[int, ObservedIssue], results: Sequence[Any]
) -> dict[int, list[str]]:
    """The comment bodies of each generated issue a verification result is about: the reads
    :func:`verification_comments` plans from."""
    numbers = {issues[r.item].number for r in results if r.item in issues}
    return {n: [c.get("body") or "" for c in repo.list_comments(n)] for n in sorted(numbers)}


def verification_comments(
    comments: dict[int, list[str]],
    issues: dict[int, ObservedIssue],
    version: str,
    results: Sequence[Any],
) -> list[Comment]:
    """One comment per generated issue whose verification status changed (idempotent); pure,
    from the comments :func:`observe_comments` read."""
    from ..verify import comments_to_post

    out = []
    for result in results:
        issue = issues.get(result.item)
        if issue is None:
            continue
        bodies = comments.get(issue.number, [])
        out += [
            Comment(result.item, issue.number, body)
            for body in comments_to_post(bodies, result.item, version, result.status)
        ]
    return out
