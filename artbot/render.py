"""Render findings into issue titles and bodies, and the tracking checklist, from Jinja templates.

Pure: a finding and template text in, markdown out. The templates in ``templates/`` decide
what the output looks like; this module only builds the context they see.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from .catalog import Catalog
from .errors import BadInput
from .marker import BODY_END, BODY_START, MARKER_PREFIX, IssueMarker, marker_lines, region_span
from .models import TITLE_LIMIT, Audit, Finding, Location
from .status import ItemStatus
from .status_view import status_view

# GitHub rejects an issue body longer than this (422 "body is too long").
GITHUB_BODY_LIMIT = 65_536


@dataclass(frozen=True)
class RenderedIssue:
    item: int
    title: str
    body: str
    labels: tuple[str, ...]
    marker: IssueMarker


def permalink(audit: Audit, location: Location) -> str:
    """A permalink at the audit commit: ``#L299`` for one line, ``#L375-L385`` for a range."""
    lines = (
        f"#L{location.start}"
        if location.start == location.end
        else f"#L{location.start}-L{location.end}"
    )
    return (
        f"{audit.web_url.rstrip('/')}/{audit.repository}/blob/{audit.commit}/{location.path}{lines}"
    )


def tool_commit(root: Path) -> str | None:
    """The artbot commit checked out at ``root`` (for permalinks to full repro scripts)."""
    import subprocess

    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and len(sha) == 40 else None


def minimal_repro_path(finding: Finding) -> str:
    return f"repros/minimal/item{finding.item:02d}.py"


def summary_lines(result: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """(claim id, what the run found) for each ``claim <id>: ...`` line of a captured run,
    escaped for a markdown table cell. Notes stay in the linked script's output."""
    if not result:
        return []
    rows = []
    for line in str(result.get("stdout", "")).splitlines():
        if line.startswith("claim ") and ":" in line:
            cid, _, found = line[len("claim ") :].partition(":")
            rows.append((cid.strip().replace("|", "\\|"), found.strip().replace("|", "\\|")))
    return rows


def environment(templates_dir: Path) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["permalink"] = lambda loc, audit: permalink(audit, loc)
    return env


def issue_labels(audit: Audit, finding: Finding) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*audit.labels, *finding.labels]))


def render_issue(
    catalog: Catalog,
    finding: Finding,
    *,
    tracking_issue: int | None = None,
    repro_result: Mapping[str, Any] | None = None,
    templates_dir: Path | None = None,
    status: ItemStatus | None = None,
    commit: str | None = None,
) -> RenderedIssue:
    """Title and body of the dedicated issue for ``finding``.

    Raises :class:`BadInput` when the body would exceed GitHub's limit, so nothing is sent.
    """
    audit = catalog.audit
    env = environment(templates_dir or catalog.root / "templates")
    marker = IssueMarker(audit.commit, finding.item)
    sha = commit or tool_commit(catalog.root)
    minimal_path = minimal_repro_path(finding)
    minimal_file = catalog.root / minimal_path
    minimal = minimal_file.read_text(encoding="utf-8") if minimal_file.is_file() else None
    context = {
        "audit": audit,
        "finding": finding,
        "locations": [(loc, permalink(audit, loc)) for loc in finding.locations],
        "tracking_issue": tracking_issue if tracking_issue is not None else audit.tracking_issue,
        "repro": {
            "path": finding.repro,
            "command": f"python {finding.repro}",
            "url": f"{audit.web_url.rstrip('/')}/{audit.tool_repository}/blob/"
            f"{sha or 'main'}/{finding.repro}",
            "commit_note": None if sha else "link points at the main branch: no commit was known",
            "minimal": minimal,
            "minimal_path": minimal_path,
            "result": usable_result(repro_result),
            "claim_lines": summary_lines(usable_result(repro_result)),
        },
        "source_file": catalog.files.get(finding.item, "findings/"),
        # Where the finding stands in ART (findings/status/NN.json); None when not recorded.
        "status": status_view(finding, status),
        "marker": str(marker),
        "body_start": BODY_START,
        "body_end": BODY_END,
    }
    try:
        title = env.get_template("issue_title.md.j2").render(context).strip()
        body = env.get_template("issue_body.md.j2").render(context)
    except jinja2.TemplateError as exc:
        raise BadInput(f"templates: {type(exc).__name__}: {exc}") from exc
    where = catalog.files.get(finding.item, finding.repro)
    if len(body) > GITHUB_BODY_LIMIT:
        raise BadInput(
            f"{where}: rendered body is {len(body):,} "
            f"characters; GitHub's limit is {GITHUB_BODY_LIMIT:,}"
        )
    if not title or "\n" in title or "\r" in title or len(title) > TITLE_LIMIT:
        raise BadInput(
            f"{where}: rendered title must be one line of 1-{TITLE_LIMIT} characters "
            f"(it has {len(title)})"
        )
    check_markers(body, marker, where)
    return RenderedIssue(finding.item, title, body, issue_labels(audit, finding), marker)


def check_markers(body: str, marker: IssueMarker, where: str) -> None:
    """A rendered body holds exactly one owned region with its finding marker, and no copy
    of a region, finding or checklist marker (a repro script or its output could carry one).
    Other artbot markers the templates write (status) are allowed."""
    ok = (
        len(marker_lines(body, BODY_START)) == 1
        and len(marker_lines(body, BODY_END)) == 1
        and region_span(body) is not None
        and IssueMarker.find(body) == marker
        and body.count(BODY_START) == 1
        and body.count(BODY_END) == 1
        and body.count("<!-- artbot:finding") == 1
        and "<!-- artbot:checklist" not in body
    )
    if not ok:
        raise BadInput(
            f"{where}: rendered body must hold exactly one artbot region and marker; "
            f"some embedded text (a script, its output) contains {MARKER_PREFIX!r}"
        )


def usable_result(result: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A captured repro run is evidence only if it finished cleanly with a verdict."""
    if not result or result.get("status") != "ok":
        return None
    return result


def render_checklist(
    entries: Sequence[Any],
    audit: Audit,
    templates_dir: Path,
    sub_issues: Any = None,
    panel: Any = None,
) -> str:
    """The inner lines of the tracking issue's managed block; ``sub_issues`` is the
    :class:`artbot.subissues.SubIssueRecord` kept in it (None: no sub-issue line), ``panel``
    the :class:`artbot.panel.Panel` of requests (None: every request offered, unticked)."""
    from .panel import panel as requests_panel

    env = environment(templates_dir)
    try:
        return env.get_template("checklist.md.j2").render(
            entries=entries,
            audit_commit=audit.commit,
            sub_issues=sub_issues,
            panel=panel if panel is not None else requests_panel(entries, (), None),
        )
    except jinja2.TemplateError as exc:
        raise BadInput(f"templates: {type(exc).__name__}: {exc}") from exc


def render_status_comment(view: Any, issue_state: str, audit: Audit, templates_dir: Path) -> str:
    """The comment artbot posts once when an item's recorded status changes."""
    env = environment(templates_dir)
    try:
        return env.get_template("status_comment.md.j2").render(
            status=view, issue_state=issue_state, audit=audit
        )
    except jinja2.TemplateError as exc:
        raise BadInput(f"templates: {type(exc).__name__}: {exc}") from exc
