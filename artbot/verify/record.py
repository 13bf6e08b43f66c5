"""Verification results as status points (:mod:`artbot.status`), merged into the records.

The audit point comes from the catalog's evidence, the captured repro output in
``findings/results/NN.json``: per claim where the repro reports claims, else the repro's
verdict for a finding with a single claim, else ``not checked``. Its method is ``modelled``:
the repro is artbot's model of ART's code (e2a406a48 is in no release, so none can be run).
A release (or main) point comes from :func:`artbot.verify.rejudge.verify_code`; a finding
without a ``check_art`` gets ``not checked`` for every claim, saying why and what the anchor
check found at that point.
Pure apart from reading the results file.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Literal

from .. import __version__
from ..records.models import Audit, Finding
from ..repro.run import load_result
from ..status import ClaimResult, ClaimVerdict, ItemStatus, Method, StatusPoint, version_key
from ..status.dating import DATING_FILE, AnchorDating, ReleaseAnchors, dump_dating, load_dating
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
    how = f"artbot's model of ART's code, run on CPU: {data.get('command', finding.repro)}"
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
        method = None if verdict is ClaimVerdict.not_checked else Method.modelled
        claims[claim.id] = ClaimResult(verdict=verdict, detail=detail, method=method)
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


def record_status(
    item: int, existing: ItemStatus | None, audit: StatusPoint | None, point: StatusPoint
) -> ItemStatus:
    """``existing`` with ``point`` added (replacing the one with the same source and label; a
    new main point replaces the old) and the audit point refreshed when given. Order: the
    audit first, releases by version, main last. A fix's upstream change, recorded by
    ``artbot verify changes``, is kept while the fixing lines it was found for are unchanged."""
    old = list(existing.points) if existing else []
    replaced = next((p for p in old if (p.source, p.label) == (point.source, point.label)), None)
    if replaced is not None:
        point = keep_changes(replaced, point)
    keep = [
        p
        for p in old
        if p.source != "audit"
        and (p.source, p.label) != (point.source, point.label)
        and not (point.source == "main" and p.source == "main")
    ]
    keep.append(point)
    releases = sorted(
        (p for p in keep if p.source == "release"), key=lambda p: version_key(p.label)
    )
    mains = [p for p in keep if p.source == "main"]
    head = [audit] if audit else [p for p in old if p.source == "audit"]
    return ItemStatus(item=item, points=[*head, *releases, *mains])


def keep_changes(old: StatusPoint, new: StatusPoint) -> StatusPoint:
    """``new`` with each claim's ``fix.change`` taken from ``old`` where the fixing lines match."""
    claims = {}
    for cid, result in new.claims.items():
        before = old.claims.get(cid)
        if (
            result.fix is not None
            and result.fix.change is None
            and before is not None
            and before.fix is not None
            and before.fix.change is not None
            and before.fix.lines == result.fix.lines
        ):
            fix = result.fix.model_copy(update={"change": before.fix.change})
            result = result.model_copy(update={"fix": fix})
        claims[cid] = result
    return new.model_copy(update={"claims": claims})


def anchors_record(
    root: Path, audit: Audit, label: str, anchors: Sequence[AnchorResult], today: str | None = None
) -> Path:
    """Record how many of the audit's anchors sit at the audit's lines in release ``label``
    (``findings/status/anchors.json``, :mod:`artbot.status.dating`); returns the file written."""
    with_anchor = [
        a for a in anchors if a.status is not AnchorStatus.no_anchor and a.audit_lines
    ]  # lines artbot located itself in a release would date the audit to that release
    release = ReleaseAnchors(
        label=label,
        checked_on=today or date.today().isoformat(),
        at_lines=[
            f"{a.item}:{a.path}:{a.lines[0]}-{a.lines[1]}"
            for a in with_anchor
            if a.status is AnchorStatus.ok
        ],
        moved=sum(a.status is AnchorStatus.moved for a in with_anchor),
        missing=sum(a.status not in (AnchorStatus.ok, AnchorStatus.moved) for a in with_anchor),
    )
    existing = load_dating(root)
    if existing is None or existing.audit != audit.commit or existing.anchors != len(with_anchor):
        existing = AnchorDating(audit=audit.commit, anchors=len(with_anchor))
    path = root / DATING_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_dating(existing.with_release(release)), encoding="utf-8")
    return path


def recorded_check(root: Path, version: str) -> tuple[str, list[CodeResult]]:
    """``sync --verify VERSION``: the check of ``VERSION`` (``latest``: the newest release)
    that ``verify --release VERSION --record`` recorded in ``findings/status/``, as (version,
    no fresh results): sync reports what was recorded and runs no ART code itself, so the
    process that holds the write token never imports a release's code."""
    from ..errors import ReleaseUnavailable
    from ..inputs import check_version
    from ..status import release_points

    if version != "latest":
        check_version(version, "--verify")
    labels = {p.label for p in release_points(root)}
    how = "record one with `artbot verify --release {v} --record`, in a process without the token"
    if version == "latest":
        if not labels:
            raise ReleaseUnavailable(
                "findings/status/ records no release check; " + how.format(v="latest")
            )
        return max(labels, key=version_key), []
    if version not in labels:
        raise ReleaseUnavailable(
            f"findings/status/ records no check of openpipe-art {version}; " + how.format(v=version)
        )
    return version, []
