"""Verification results as status points (:mod:`artbot.status`), merged into the records.

The audit point comes from the catalog's evidence, the captured repro output in
``findings/results/NN.json``: per claim where the repro reports claims, else the repro's
verdict for a finding with a single claim, else ``not checked``. A release (or main) point
comes from :func:`artbot.verify.code.verify_code`; a finding without a ``check_art`` gets
``not checked`` for every claim, saying why and what the anchor check found at that point.
Pure apart from reading the results file.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Literal

from .. import __version__
from ..models import Audit, Finding
from ..reprorun import load_result
from ..status import ClaimResult, ClaimVerdict, ItemStatus, StatusPoint
from .anchors import AnchorResult, AnchorStatus
from .code import CodeResult, CodeStatus

Source = Literal["audit", "release", "main"]
_RESULT_VERDICTS = {"reproduced": ClaimVerdict.reproduced, "fixed": ClaimVerdict.fixed}


def audit_point(finding: Finding, audit: Audit, root: Path) -> StatusPoint | None:
    """What the captured repro output says at the audit commit; None when none is stored."""
    path = root / "findings" / "results" / f"{finding.item:02d}.json"
    if not path.is_file():
        return None
    data = load_result(root, finding.item) or {}
    reported = data.get("claims") or {}
    how = f"artbot's CPU reproduction, {data.get('command', finding.repro)}"
    claims: dict[str, ClaimResult] = {}
    for claim in finding.claims:
        if claim.id in reported:
            text = str(reported[claim.id])
            verdict = _RESULT_VERDICTS.get(text, ClaimVerdict.not_checked)
            detail = "" if verdict is not ClaimVerdict.not_checked else text
        elif len(finding.claims) == 1 and data.get("verdict") in _RESULT_VERDICTS:
            verdict, detail = _RESULT_VERDICTS[data["verdict"]], ""
        else:
            verdict = ClaimVerdict.not_checked
            detail = "the repro does not report this claim on its own"
        claims[claim.id] = ClaimResult(verdict=verdict, detail=detail)
    finished = str(data.get("finished_at", ""))[:10] or date.today().isoformat()
    return StatusPoint(
        source="audit",
        label=audit.commit,
        checked_on=finished,
        artbot_version=__version__,
        how=how,
        claims=claims,
    )


def release_point(
    finding: Finding,
    label: str,
    code: CodeResult | None,
    anchors: Sequence[AnchorResult],
    *,
    source: Source = "release",
    today: str | None = None,
) -> StatusPoint:
    """One finding at one release (or main), from its code check, else not checked."""
    today = today or date.today().isoformat()
    mine = [a for a in anchors if a.item == finding.item]
    if code is not None and code.status is not CodeStatus.could_not_run:
        how = code.scope or "its repro run against ART's own functions"
        if code.ran:
            how += f" ({', '.join(code.ran)})"
        claims = dict(code.claims)
    else:
        why = (
            f"the check could not run: {code.detail}"
            if code is not None
            else "artbot has no check that runs ART's own code for it on CPU"
        )
        how = why + "; " + _anchor_summary(mine)
        claims = {
            c.id: ClaimResult(verdict=ClaimVerdict.not_checked, detail=why) for c in finding.claims
        }
    return StatusPoint(
        source=source,
        label=label,
        checked_on=today,
        artbot_version=__version__,
        how=how,
        claims=claims,
    )


def _anchor_summary(anchors: Sequence[AnchorResult]) -> str:
    if not anchors:
        return "no cited lines"
    ok = sum(a.status is AnchorStatus.ok for a in anchors)
    if ok == len(anchors):
        return f"all {ok} cited line ranges still hold their anchor lines"
    moved = sum(a.status is AnchorStatus.moved for a in anchors)
    return f"cited ranges: {ok} unchanged, {moved} moved, {len(anchors) - ok - moved} not found"


def _version_key(label: str) -> tuple[tuple[int, int, str], ...]:
    parts = label.replace("-", ".").split(".")
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)


def record_status(
    item: int, existing: ItemStatus | None, audit: StatusPoint | None, point: StatusPoint
) -> ItemStatus:
    """``existing`` with ``point`` added (replacing the one with the same source and label; a
    new main point replaces the old) and the audit point refreshed when given. Order: the
    audit first, releases by version, main last."""
    old = list(existing.points) if existing else []
    keep = [
        p
        for p in old
        if p.source != "audit"
        and (p.source, p.label) != (point.source, point.label)
        and not (point.source == "main" and p.source == "main")
    ]
    keep.append(point)
    releases = sorted(
        (p for p in keep if p.source == "release"), key=lambda p: _version_key(p.label)
    )
    mains = [p for p in keep if p.source == "main"]
    head = [audit] if audit else [p for p in old if p.source == "audit"]
    return ItemStatus(item=item, points=[*head, *releases, *mains])
