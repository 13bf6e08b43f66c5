"""What an issue says about where its finding stands, and how it is filed: pure.

:func:`status_view` turns a finding and its recorded :class:`~artbot.status.ItemStatus` into
the rows ``templates/partials/status.md.j2`` renders and the decision ``open`` acts on:

* **closed** (filed as a closed issue, ``state_reason: completed``) only when *every* claim of
  the finding was checked at the newest release and is fixed there and stays fixed from
  :meth:`~artbot.status.ItemStatus.fixed_in` on. A claim that was not checked keeps the issue
  open: artbot never reports "fixed" for more than it checked.
* **open** otherwise. When some claims are fixed, the issue is scoped to what remains: its
  title is the remaining claim's ``symptom`` (the finding's title when several remain).

Every string that ends up in a table cell is made one line without ``|``, so a detail copied
from a repro's output cannot break the table or inject markdown structure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from .models import Claim, Finding
from .status import ClaimResult, ClaimVerdict, ItemStatus, StatusError, StatusPoint, Verdict

Filing = Literal["open", "closed"]
_DETAIL_MAX = 80
_STATE_RE = re.compile(r"<!-- artbot:status item=(\d+) state=([A-Za-z0-9=,.+!-]+) -->")
# What a point's label (a version or a commit) and a claim id may be: they reach headings,
# hidden markers and the state token, so anything else is refused rather than escaped.
_LABEL_RE = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+!-]{0,39}")
_CLAIM_RE = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
FILED_CLOSED = "<!-- artbot:filed state=closed -->"


@dataclass(frozen=True)
class Column:
    """One checked point, as a table heading."""

    source: str  # audit | release | main
    label: str  # e2a406a48, 0.5.23, a main commit
    checked_on: str
    newest: bool = False


@dataclass(frozen=True)
class Row:
    claim: str  # the claim id
    text: str  # the audit's words, one line, table-safe
    sentence: str  # the audit's words, one line, for running text
    cells: tuple[str, ...]  # one per column: "reproduced", "fixed", "not checked (why)"
    fixed_in: str | None  # the release from which this claim stays fixed


@dataclass(frozen=True)
class StatusView:
    """Everything the status partial, the title and the filing decision need."""

    item: int
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    newest: str | None  # the newest release checked; None when only the audit was checked
    verdict: Verdict  # at the newest release checked
    fixed_in: str | None  # every claim fixed from this release on (and all were checked)
    fixed: tuple[Row, ...]  # fixed at the newest release
    remaining: tuple[Row, ...]  # reproduced at the newest release
    unchecked: tuple[Row, ...]  # not checked at the newest release
    filing: Filing
    title: str | None  # the remaining symptom, when the issue is scoped to it
    marker: str  # hidden line recording the state this body states

    @property
    def state(self) -> str:
        return status_state(self)


def one_line(text: str, limit: int = _DETAIL_MAX) -> str:
    """One line, no raw HTML, at most ``limit`` characters."""
    flat = " ".join(text.split()).replace("<", "&lt;")
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def cell_text(text: str, limit: int = _DETAIL_MAX) -> str:
    """:func:`one_line`, with every ``|`` escaped so it cannot end a table cell."""
    return one_line(text, limit).replace("\\", "\\\\").replace("|", "\\|")


_NOT_CHECKED_RE = re.compile(r"^not checked\s*\((.*)\)$", re.S)


def _cell(result: ClaimResult | None) -> str:
    if result is None:
        return "not checked"
    # A repro's detail may already read "not checked (why)": say it once.
    why = _NOT_CHECKED_RE.sub(r"\1", result.detail.strip())
    if result.verdict is ClaimVerdict.not_checked and why:
        return f"not checked ({cell_text(why)})"
    return result.verdict.value


def _claims(finding: Finding, status: ItemStatus) -> list[Claim | str]:
    """The finding's claims in its order, then any claim only the status record names."""
    declared = {c.id for c in finding.claims}
    extra = [
        cid for p in status.points for cid in p.claims if cid not in declared
    ]  # a record older or newer than the YAML: shown by id, never dropped
    return [*finding.claims, *dict.fromkeys(extra)]


def _columns(status: ItemStatus) -> list[tuple[Column, StatusPoint]]:
    audit = next((p for p in status.points if p.source == "audit"), None)
    releases = status.releases()
    out: list[tuple[Column, StatusPoint]] = []
    if audit is not None:
        out.append((Column("audit", audit.label, audit.checked_on), audit))
    if releases:
        newest = releases[-1]
        out.append((Column("release", newest.label, newest.checked_on, newest=True), newest))
    main = status.main
    if main is not None:
        out.append((Column("main", main.label, main.checked_on), main))
    return out


def status_view(finding: Finding, status: ItemStatus | None) -> StatusView | None:
    """The status an issue states for ``finding``, or None when nothing was recorded."""
    if status is None:
        return None
    if status.item != finding.item:
        raise StatusError(f"status of item {status.item} given for item {finding.item}")
    for p in status.points:
        if not _LABEL_RE.fullmatch(p.label):
            raise StatusError(f"item {status.item}: {p.label!r} is not a version or commit")
        bad = [cid for cid in p.claims if not _CLAIM_RE.fullmatch(cid) or len(cid) > 60]
        if bad:
            raise StatusError(f"item {status.item}: {bad[0]!r} is not a claim id (kebab-case)")
    columns = _columns(status)
    releases = status.releases()
    newest_point = releases[-1] if releases else None
    rows = []
    for claim in _claims(finding, status):
        cid = claim if isinstance(claim, str) else claim.id
        text = cid if isinstance(claim, str) else claim.text
        rows.append(
            Row(
                claim=cid,
                text=cell_text(text, 200),
                sentence=one_line(text, 200),
                cells=tuple(_cell(point.claims.get(cid)) for _, point in columns),
                fixed_in=status.fixed_in(cid) if newest_point else None,
            )
        )

    def at_newest(row: Row) -> ClaimVerdict:
        if newest_point is None:
            return ClaimVerdict.not_checked
        result = newest_point.claims.get(row.claim)
        return result.verdict if result else ClaimVerdict.not_checked

    fixed = tuple(r for r in rows if at_newest(r) is ClaimVerdict.fixed)
    remaining = tuple(r for r in rows if at_newest(r) is ClaimVerdict.reproduced)
    unchecked = tuple(r for r in rows if at_newest(r) is ClaimVerdict.not_checked)
    all_fixed = bool(rows) and len(fixed) == len(rows) and all(r.fixed_in for r in rows)
    fixed_in = status.fixed_in() if all_fixed else None
    verdict = newest_point.verdict if newest_point else Verdict.not_checked
    title = None
    if fixed and fixed_in is None:
        open_rows = [*remaining, *unchecked]
        if len(open_rows) == 1 and isinstance(open_claim := _claim(finding, open_rows[0]), Claim):
            title = open_claim.symptom
    view = StatusView(
        item=finding.item,
        columns=tuple(c for c, _ in columns),
        rows=tuple(rows),
        newest=newest_point.label if newest_point else None,
        verdict=verdict,
        fixed_in=fixed_in,
        fixed=fixed,
        remaining=remaining,
        unchecked=unchecked,
        filing="closed" if fixed_in else "open",
        title=title,
        marker="",
    )
    return replace(view, marker=f"<!-- artbot:status item={view.item} state={view.state} -->")


def _claim(finding: Finding, row: Row) -> Claim | None:
    return next((c for c in finding.claims if c.id == row.claim), None)


def status_state(view: StatusView) -> str:
    """A short, stable token for what the issue states: changes exactly when a comment is due.

    The newest release's number is part of it only through ``fixed_in``: a newer release that
    changes nothing is not a status change.
    """
    fixed = ",".join(sorted(r.claim for r in view.fixed)) or "none"
    token = f"{view.verdict.value.replace(' ', '-')},fixed={fixed}"
    if view.fixed_in:
        token += f",in={view.fixed_in}"
    return token


def stated_status(body: str | None, item: int) -> str | None:
    """The status token an issue body (or comment) states for ``item``; the last one wins."""
    found = [m.group(2) for m in _STATE_RE.finditer(body or "") if int(m.group(1)) == item]
    return found[-1] if found else None


def stated_in_comments(bodies: Sequence[str], item: int) -> str | None:
    """The status the newest artbot status comment states, oldest comment first in ``bodies``."""
    states = [s for b in bodies if (s := stated_status(b, item)) is not None]
    return states[-1] if states else None
