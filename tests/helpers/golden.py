"""The golden files (tests/golden/): each issue as filed and the tracking checklist, rendered
from the shipped catalog and the recorded status. tests/render/test_issue.py compares them;
``python -m tests.golden_update`` (make golden) rewrites them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from artbot.records.catalog import Catalog, load_catalog
from artbot.records.marker import IssueMarker
from artbot.records.models import Finding
from artbot.render.issue import RenderedIssue, Renderer
from tests.helpers.shipped import ISSUE_ITEMS

REPO = Path(__file__).resolve().parents[2]
GOLDEN_DIR = REPO / "tests" / "golden"
GOLDEN_ITEMS = ISSUE_ITEMS
TRACKING = 1111


def render_issue(
    catalog: Catalog, finding: Finding, *, templates_dir: Path | None = None, **keywords: Any
) -> RenderedIssue:
    """:meth:`Renderer.issue` (the same keywords) with a renderer for ``catalog``."""
    return Renderer(catalog, templates_dir).issue(finding, **keywords)


def golden_text(item: int) -> str:
    """The rendered issue as the golden file holds it: with the recorded status
    (findings/status/), without captured repro output (it varies by machine), from a checkout
    whose repository is not known (the script is named, not linked)."""
    from artbot.status import load_status

    catalog = load_catalog(REPO)
    issue = render_issue(
        catalog,
        catalog.get(item),
        tracking_issue=TRACKING,
        status=load_status(REPO, item),
        commit="0" * 40,
    )
    return f"# {issue.title}\n\nLabels: {', '.join(issue.labels)}\n\n{issue.body}"


def golden_checklist() -> str:
    """The tracking issue's block once items 4-11 are filed as #1112-#1119, with the
    recorded status (findings/status/) ticking what is fixed."""
    from artbot.records.observed import ObservedIssue
    from artbot.render.issue import dating_sentence, render_checklist
    from artbot.run.commands import status_views
    from artbot.run.plan import checklist_entries

    catalog = load_catalog(REPO)
    observed = []
    for n, item in enumerate(GOLDEN_ITEMS, start=1112):
        issue = render_issue(catalog, catalog.get(item), tracking_issue=TRACKING)
        marker = IssueMarker.find(issue.body)
        observed.append(ObservedIssue(n, issue.title, issue.body, "open", None, "", (), marker))
    views = status_views(catalog, catalog.findings)
    entries = checklist_entries(catalog.findings, observed, catalog.audit, None, views)
    return render_checklist(
        entries, catalog.audit, REPO / "templates", dating=dating_sentence(catalog)
    )
