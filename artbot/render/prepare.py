"""Every issue a run files or shows, rendered once, from what rendering needs beyond the
catalog: each item's captured repro output (``findings/results/NN.json``) and its recorded
status (``findings/status/NN.json``). The one place that reads them for rendering; ``render``,
``open`` and ``sync`` all come through here, before any request, so a body over GitHub's
limit stops ``render`` and ``open`` with exit 2 before anything is sent; ``sync`` reports that
item and skips it (its status record grew it: the rest must still be kept in step)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..records.catalog import Catalog
from ..records.models import Finding
from ..repro.run import load_result
from ..status import load_status
from .issue import BodyTooLong, RenderedIssue, Renderer, usable_result


def render_all(
    catalog: Catalog,
    findings: Sequence[Finding],
    tracking_issue: int | None,
    *,
    no_capture: Callable[[int], None] | None = None,
    issues: Mapping[int, int] | None = None,
    too_long: Callable[[str], None] | None = None,
) -> dict[int, RenderedIssue]:
    """Each finding's issue, in order; ``no_capture`` hears of each item with no usable capture
    on file. ``issues`` (item -> issue number) lets a follow-up link the issue it follows.
    ``too_long``: a body over GitHub's limit is said to it and left out instead of stopping
    the run (``sync``: one item's recorded status must not stop the rest)."""
    preset = {f.item: f.issue for f in catalog.findings if f.issue}
    known = {**preset, **(issues or {})}
    renderer = Renderer(catalog)
    out = {}
    for f in findings:
        captured = load_result(catalog.root, f.item)
        if no_capture is not None and usable_result(captured) is None:
            no_capture(f.item)
        try:
            out[f.item] = renderer.issue(
                f,
                tracking_issue=tracking_issue,
                repro_result=captured,
                status=load_status(catalog.root, f.item),
                follows=known.get(f.follows) if f.follows else None,
                issues=known,
            )
        except BodyTooLong as exc:
            if too_long is None:
                raise
            too_long(f"item {f.item}: not synced: {exc}")
    return out
