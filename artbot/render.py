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
    """A line-range permalink at the audit commit."""
    return (
        f"{audit.web_url.rstrip('/')}/{audit.repository}/blob/{audit.commit}/"
        f"{location.path}#L{location.start}-L{location.end}"
    )


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
) -> RenderedIssue:
    """Title and body of the dedicated issue for ``finding``.

    Raises :class:`BadInput` when the body would exceed GitHub's limit, so nothing is sent.
    """
    audit = catalog.audit
    env = environment(templates_dir or catalog.root / "templates")
    marker = IssueMarker(audit.commit, finding.item)
    context = {
        "audit": audit,
        "finding": finding,
        "locations": [(loc, permalink(audit, loc)) for loc in finding.locations],
        "tracking_issue": tracking_issue if tracking_issue is not None else audit.tracking_issue,
        "repro": {
            "path": finding.repro,
            "command": f"python {finding.repro}",
            "script": catalog.sources[finding.repro],
            # The issue carries the helper modules too, so the script runs from the issue alone.
            "helpers": [(p, catalog.sources[p]) for p in catalog.helpers(finding.repro)],
            "result": usable_result(repro_result),
        },
        "source_file": catalog.files.get(finding.item, "findings/"),
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
    """A rendered body holds exactly one owned region with its finding marker and no other
    artbot marker text (a repro script or captured output could carry one)."""
    ok = (
        len(marker_lines(body, BODY_START)) == 1
        and len(marker_lines(body, BODY_END)) == 1
        and region_span(body) is not None
        and IssueMarker.find(body) == marker
        and body.count(MARKER_PREFIX) == 3
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


def render_checklist(entries: Sequence[Any], audit: Audit, templates_dir: Path) -> str:
    """The inner lines of the tracking issue's managed block."""
    env = environment(templates_dir)
    try:
        return env.get_template("checklist.md.j2").render(
            entries=entries, audit_commit=audit.commit
        )
    except jinja2.TemplateError as exc:
        raise BadInput(f"templates: {type(exc).__name__}: {exc}") from exc
