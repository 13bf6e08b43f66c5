"""Does every cited range still hold its anchor line? (ok / moved / missing / out of range)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..records.catalog import Catalog
from ..records.models import Location
from .tree import ArtTree


class AnchorStatus(StrEnum):
    ok = "ok"
    moved = "moved"
    missing = "missing"
    out_of_range = "out of range"
    no_anchor = "no anchor"

    @property
    def failed(self) -> bool:
        """Whether the location needs attention (``no anchor`` cannot be checked, so it is not)."""
        return self not in (AnchorStatus.ok, AnchorStatus.no_anchor)


@dataclass(frozen=True)
class AnchorResult:
    item: int
    path: str
    lines: tuple[int, int]
    anchor: str | None
    status: AnchorStatus
    new_lines: tuple[int, int] | None = None
    detail: str = ""
    audit_lines: bool = True  # False: lines artbot located in a release (they date nothing)

    def as_json(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "path": self.path,
            "lines": list(self.lines),
            "anchor": self.anchor,
            "status": self.status.value,
            "new_lines": list(self.new_lines) if self.new_lines else None,
            "detail": self.detail,
        }


def check_location(
    location: Location, text: str | None
) -> tuple[AnchorStatus, tuple[int, int] | None, str]:
    """Status of one location against a file's text (None: the file is absent). An anchor
    matches a line equal once stripped; outside the range, the new range keeps its length and
    is the smallest shift that brings the nearest occurrence back in."""
    if text is None:
        return AnchorStatus.missing, None, "file not found"
    lines = text.splitlines()
    n = len(lines)
    start, end = location.lines
    in_bounds = end <= n
    if location.anchor is None:
        if in_bounds:
            return AnchorStatus.no_anchor, None, "no anchor to check"
        return AnchorStatus.out_of_range, None, f"the file has {n} lines"
    wanted = location.anchor.strip()
    hits = [i for i, line in enumerate(lines, 1) if line.strip() == wanted]
    inside = [h for h in hits if start <= h <= end]
    if in_bounds and inside:
        return AnchorStatus.ok, None, f"anchor at line {inside[0]}"
    if hits:
        hit = min(hits, key=lambda h: (_distance(h, start, end), h))
        new = _shifted(start, end, hit, n)
        also = [h for h in hits if h != hit]
        more = f" (also at {', '.join(map(str, also))})" if also else ""
        return AnchorStatus.moved, new, f"anchor at line {hit}{more}"
    if not in_bounds:
        return AnchorStatus.out_of_range, None, f"the file has {n} lines; anchor not found"
    return AnchorStatus.missing, None, "anchor not found in the file"


def _distance(line: int, start: int, end: int) -> int:
    return start - line if line < start else max(0, line - end)


def _shifted(start: int, end: int, hit: int, n: int) -> tuple[int, int]:
    length = end - start + 1
    new_start = start + hit - min(max(hit, start), end)
    new_start = max(1, min(new_start, n - length + 1))
    return new_start, min(n, new_start + length - 1)


def verify_anchors(catalog: Catalog, tree: ArtTree) -> list[AnchorResult]:
    """Every location of every finding, checked against ``tree``."""
    texts: dict[str, str | None] = {}
    results = []
    for finding in catalog.findings:
        for location in finding.locations:
            if location.path not in texts:
                texts[location.path] = tree.read(location.path)
            status, new_lines, detail = check_location(location, texts[location.path])
            results.append(
                AnchorResult(
                    finding.item,
                    location.path,
                    location.lines,
                    location.anchor,
                    status,
                    new_lines,
                    detail,
                    audit_lines=location.located_in is None,
                )
            )
    return results


def anchor_table(catalog: Catalog, results: Sequence[AnchorResult], tree: ArtTree) -> str:
    """Per finding, one line per location: status, path:lines, and what was found."""
    out = [f"anchors against {tree.label}"]
    out += [f"note: {n}" for n in tree.notes]
    for finding in catalog.findings:
        rows = [r for r in results if r.item == finding.item]
        if not rows:
            continue
        out.append(f"item {finding.item}: {finding.title}")
        for r in rows:
            where = f"{r.path}:{_span(r.lines)}"
            if r.new_lines:
                where += f" -> {_span(r.new_lines)}"
            out.append(f"  {r.status.value:<13} {where:<52} {r.detail}")
    counts = {s: sum(r.status is s for r in results) for s in AnchorStatus}
    summary = ", ".join(f"{n} {s.value}" for s, n in counts.items() if n)
    out.append(f"{len(results)} locations: {summary}")
    return "\n".join(out)


def _span(lines: tuple[int, int]) -> str:
    return str(lines[0]) if lines[0] == lines[1] else f"{lines[0]}-{lines[1]}"


def anchors_json(results: Sequence[AnchorResult], tree: ArtTree) -> dict[str, Any]:
    return {
        "source": tree.label,
        "notes": list(tree.notes),
        "ok": not any(r.status.failed for r in results),
        "locations": [r.as_json() for r in results],
    }
