"""Checklist notes and issue comments from verification results; pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..inputs import check_version
from ..records.marker import VerifyMarker
from .code import CodeResult, CodeStatus
from .tree import DISTRIBUTION


def verification_notes(results: Iterable[CodeResult]) -> dict[int, str]:
    """One line per item for the tracking checklist, e.g. ``no longer reproduces in
    openpipe-art 0.5.21``."""
    notes: dict[int, str] = {}
    for r in results:
        scope = f" ({r.scope})" if r.scope else ""
        if r.status is CodeStatus.reproduced:
            notes[r.item] = f"still reproduces in {r.source}{scope}"
        elif r.status is CodeStatus.partial:
            remain = [c for c, v in r.claims.items() if v.verdict.value == "reproduced"]
            notes[r.item] = f"partly fixed in {r.source}; still reproduces: {', '.join(remain)}"
        elif r.status is CodeStatus.not_checked:
            notes[r.item] = f"not checked against {r.source}{scope}"
        elif r.status is CodeStatus.fixed:
            notes[r.item] = f"no longer reproduces in {r.source}{scope}"
        else:
            notes[r.item] = f"could not be checked against {r.source}: {r.detail}"
    return notes


_PHRASES = {
    CodeStatus.reproduced: "still reproduces",
    CodeStatus.partial: "partly reproduces",
    CodeStatus.fixed: "no longer reproduces",
    CodeStatus.not_checked: "was not checked",
    CodeStatus.could_not_run: "could not be checked",
}


def verification_comment(item: int, version: str, status: CodeStatus | str) -> str:
    """The comment stating one verification result, with its hidden marker."""
    status = CodeStatus(status)
    check_version(version, "version")
    marker = VerifyMarker(item, version, status.value)
    return (
        f"{marker}\n**artbot verify:** item {item} {_PHRASES[status]} in "
        f"{DISTRIBUTION} {version} (its reproduction, run against that release's own code).\n"
    )


def comments_to_post(
    existing_comment_bodies: Sequence[str], item: int, version: str, status: CodeStatus | str
) -> list[str]:
    """The comment to add for this result; none when a comment states this item, version and
    status, when the latest one states this status, or when the check could not run (our
    environment, not the issue). ``existing_comment_bodies`` are oldest first."""
    status = CodeStatus(status)
    if status in (CodeStatus.could_not_run, CodeStatus.not_checked):
        return []
    markers = [
        m for body in existing_comment_bodies for m in VerifyMarker.find_all(body) if m.item == item
    ]
    if any(m.version == version and m.status == status.value for m in markers):
        return []
    if markers and markers[-1].status == status.value:
        return []
    return [verification_comment(item, version, status)]
