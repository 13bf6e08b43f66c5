"""The comments of a sync, rendered before planning and decided from what observe read: one
per status change, and, by choice, closing what is fixed; one per verification result. The
order that makes a crash between them safe is :mod:`artbot.run.execute`'s. Only an issue
artbot filed is ever closed, and only on a status change: an issue a person reopens stays open.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..records.catalog import Catalog
from ..records.marker import owned_region
from ..records.observed import ObservedIssue
from ..render.issue import render_status_comment, render_template
from ..render.status_view import StatusView, stated_in_comments, stated_status
from ..status import ItemStatus, load_status
from .actions import Comment, StatusChange
from .issues import closes


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
    return render_template(
        templates_dir, "close_comment.md.j2", status=view, fix_lines=list(lines), audit=audit
    )


def status_texts(
    catalog: Catalog,
    found: Mapping[int, ObservedIssue],
    views: Mapping[int, StatusView | None],
) -> dict[int, str]:
    """The comment each status change would post, rendered before planning: the close
    comment when ``close_when_fixed`` closes the issue, else the status comment."""
    templates = catalog.root / "templates"
    out = {}
    for f in catalog.findings:
        issue, view = found.get(f.item), views.get(f.item)
        if issue is None or view is None or f.issue:
            continue
        if stated_status(owned_region(issue.body), f.item) == view.state:
            continue
        if closes(catalog.audit, view, issue) and view.fixed_in:
            lines = fix_lines(load_status(catalog.root, f.item), view.fixed_in)
            out[f.item] = render_close_comment(view, lines, catalog.audit, templates)
        else:
            out[f.item] = render_status_comment(view, issue.state, catalog.audit, templates)
    return out


def status_comment(
    change: StatusChange, comment_bodies: Sequence[str], text: str
) -> Comment | None:
    """The comment for ``change`` unless the newest artbot status comment already states it
    (a re-run after a crash between the comment and the body edit)."""
    if stated_in_comments(comment_bodies, change.item) == change.after:
        return None
    return Comment(change.item, change.issue, text)


def verification_comments(
    comments: Mapping[int, Sequence[str]],
    issues: Mapping[int, ObservedIssue],
    version: str,
    results: Sequence[Any],
) -> list[Comment]:
    """One comment per generated issue whose verification status changed (idempotent); pure,
    from the comments :mod:`artbot.run.observe` read."""
    from ..verify.notes import comments_to_post

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
