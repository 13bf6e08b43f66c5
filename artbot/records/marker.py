"""Hidden markers by which artbot recognises its own issues and the part of a body it owns.

The rendered text sits between ``<!-- artbot:body:start -->`` and ``<!-- artbot:body:end -->``
and holds ``<!-- artbot:finding audit=<commit> item=<n> -->``; whatever a human writes outside
that region is never touched. Pure functions only.

Regions are found structurally, so that a marker a human quotes (in a sentence, a code span,
a fenced block, a blockquote) or copies can never widen, shift or duplicate the region:

* a marker counts only when it is alone on its line (trailing spaces and CR allowed) and that
  line is outside a fenced code block;
* the region is the **last** such start marker and the first such end marker after it;
* the finding marker counts only inside that region (see :meth:`IssueMarker.find`).

Whether an issue with a marker is artbot's also depends on who wrote it: see
:func:`artbot.tracking.ownership.claim`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BODY_START = "<!-- artbot:body:start -->"
BODY_END = "<!-- artbot:body:end -->"
# Any text that could be read as one of artbot's markers; records must not contain it.
MARKER_PREFIX = "<!-- artbot"
_MARKER_RE = re.compile(r"<!-- artbot:finding audit=([0-9a-f]{7,40}) item=(\d+) -->")
_FENCE_RE = re.compile(r" {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class IssueMarker:
    audit: str
    item: int

    def __str__(self) -> str:
        return f"<!-- artbot:finding audit={self.audit} item={self.item} -->"

    @classmethod
    def find(cls, body: str | None) -> IssueMarker | None:
        """The finding marker alone on a line inside the owned region, else None."""
        span = region_span(body or "")
        if span is None:
            return None
        region = (body or "")[span[0] : span[1]]
        for line in region.split("\n"):
            m = _MARKER_RE.fullmatch(line.rstrip(" \t\r"))
            if m:
                return cls(m.group(1), int(m.group(2)))
        return None


def marker_lines(body: str, marker: str) -> list[int]:
    """Offsets of the lines that are exactly ``marker`` (outside fenced code blocks)."""
    found: list[int] = []
    fence: str | None = None
    offset = 0
    for line in body.split("\n"):
        text = line.rstrip(" \t\r")
        m = _FENCE_RE.match(text)
        if fence is None and m:
            fence = m.group(1)[0] * len(m.group(1))
        elif fence is not None:
            if m and text.strip() == m.group(1) and m.group(1).startswith(fence):
                fence = None
        elif text == marker:
            found.append(offset)
        offset += len(line) + 1
    return found


def region_span(body: str) -> tuple[int, int] | None:
    """``(start, end)`` of the owned region, markers included, or None if absent or broken."""
    starts = marker_lines(body, BODY_START)
    if not starts:
        return None
    start = starts[-1]
    ends = [e for e in marker_lines(body, BODY_END) if e > start]
    if not ends:
        return None
    return start, ends[0] + len(BODY_END)


def owned_region(body: str) -> str | None:
    """The artbot-owned part of an issue body (markers included), or None if absent or broken."""
    span = region_span(body)
    return None if span is None else body[span[0] : span[1]]


def replace_owned_region(body: str, rendered: str) -> str:
    """Put the owned region of ``rendered`` in place of the one in ``body``, by position: text
    outside it stays byte for byte. A body whose region is missing or broken (a human deleted
    a marker) gets the new region appended, so nothing is lost."""
    new_region = owned_region(rendered)
    if new_region is None:
        raise ValueError("rendered body has no owned region")
    span = region_span(body)
    if span is None:
        sep = "" if body.endswith("\n") or not body else "\n"
        return f"{body}{sep}{new_region}\n"
    return body[: span[0]] + new_region + body[span[1] :]


VERIFY_STATUSES = ("reproduced", "partial", "fixed", "not checked", "could not run")
_VERIFY_RE = re.compile(
    r"<!-- artbot:verify item=(\d+) version=([0-9A-Za-z.+!-]+) status=([a-z-]+) -->"
)


@dataclass(frozen=True)
class VerifyMarker:
    """The hidden line that makes a verification comment recognisable."""

    item: int
    version: str
    status: str  # one of VERIFY_STATUSES

    def __str__(self) -> str:
        token = self.status.replace(" ", "-")
        return f"<!-- artbot:verify item={self.item} version={self.version} status={token} -->"

    @classmethod
    def find_all(cls, body: str | None) -> list[VerifyMarker]:
        found = []
        for m in _VERIFY_RE.finditer(body or ""):
            status = m.group(3).replace("-", " ")
            if status in VERIFY_STATUSES:
                found.append(cls(int(m.group(1)), m.group(2), status))
        return found
