"""Hidden markers by which artbot recognises its own issues and the part of a body it owns.

An issue is ours when its body holds ``<!-- artbot:finding audit=<commit> item=<n> -->``.
The rendered text sits between ``<!-- artbot:body:start -->`` and ``<!-- artbot:body:end -->``;
whatever a human writes outside that region is never touched. Pure functions only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BODY_START = "<!-- artbot:body:start -->"
BODY_END = "<!-- artbot:body:end -->"
_MARKER_RE = re.compile(r"<!-- artbot:finding audit=([0-9a-f]{7,40}) item=(\d+) -->")


@dataclass(frozen=True)
class IssueMarker:
    audit: str
    item: int

    def __str__(self) -> str:
        return f"<!-- artbot:finding audit={self.audit} item={self.item} -->"

    @classmethod
    def find(cls, body: str | None) -> IssueMarker | None:
        """The first marker in ``body``, or None when the issue is not ours."""
        m = _MARKER_RE.search(body or "")
        return cls(m.group(1), int(m.group(2))) if m else None


def owned_region(body: str) -> str | None:
    """The artbot-owned part of an issue body (markers included), or None if absent or broken."""
    end = body.find(BODY_END)
    # The start nearest before the end: an orphaned start marker left by an earlier,
    # broken region must not make the region swallow the human text after it.
    start = body.rfind(BODY_START, 0, end) if end >= 0 else -1
    if start < 0:
        return None
    return body[start : end + len(BODY_END)]


def replace_owned_region(body: str, rendered: str) -> str:
    """Put the owned region of ``rendered`` in place of the one in ``body``.

    Text outside the region stays byte for byte. A body whose region is missing or
    broken (a human deleted a marker) gets the new region appended, so nothing is lost.
    """
    new_region = owned_region(rendered)
    if new_region is None:
        raise ValueError("rendered body has no owned region")
    old_region = owned_region(body)
    if old_region is None:
        sep = "" if body.endswith("\n") or not body else "\n"
        return f"{body}{sep}{new_region}\n"
    return body.replace(old_region, new_region, 1)


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
