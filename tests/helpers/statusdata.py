"""Status records built in tests: hand-written, never measured.

The claims are the catalog's own. The verdicts have the shape ``artbot verify --record``
writes, chosen per test; they are not measurements and are only ever written to a test's
temporary checkout.
"""

from __future__ import annotations

from pathlib import Path

from artbot.records.models import Claim, Finding
from artbot.status import (
    ClaimResult,
    ClaimVerdict,
    ItemStatus,
    StatusPoint,
    dump_status,
    status_path,
)

R, F, N = ClaimVerdict.reproduced, ClaimVerdict.fixed, ClaimVerdict.not_checked


def claims_of(finding: Finding) -> list[Claim]:
    assert finding.claims, f"item {finding.item} declares no claims"
    return list(finding.claims)


def with_claims(finding: Finding) -> Finding:
    """The finding as the catalog holds it (every record declares its claims)."""
    claims_of(finding)
    return finding


def point(source: str, label: str, verdicts: dict[str, ClaimVerdict], **kw: str) -> StatusPoint:
    return StatusPoint(
        source=source,  # type: ignore[arg-type]
        label=label,
        checked_on=kw.get("checked_on", "2026-12-02"),
        artbot_version="0.1.0",
        claims={
            cid: ClaimResult(verdict=v, detail=kw.get("detail", "")) for cid, v in verdicts.items()
        },
    )


def is_mask_claim(claim: Claim) -> bool:
    return "mask" in claim.id


def fixed_item(finding: Finding, release: str = "0.5.21", newest: str = "0.5.23") -> ItemStatus:
    """Every claim reproduced at the audit, fixed from ``release`` on."""
    ids = [c.id for c in claims_of(finding)]
    points = [point("audit", "e2a406a48", dict.fromkeys(ids, R))]
    points += [point("release", v, dict.fromkeys(ids, F)) for v in dict.fromkeys([release, newest])]
    return ItemStatus(item=finding.item, points=points)


def partial_item(finding: Finding, release: str = "0.5.21", newest: str = "0.5.23") -> ItemStatus:
    """Item 9's shape: the mask claims fixed from ``release`` on, the rest still reproduced."""
    claims = claims_of(finding)
    later = {c.id: (F if is_mask_claim(c) else R) for c in claims}
    points = [point("audit", "e2a406a48", {c.id: R for c in claims})]
    points += [point("release", v, later) for v in dict.fromkeys([release, newest])]
    return ItemStatus(item=finding.item, points=points)


def reproduced_item(finding: Finding, newest: str = "0.5.23") -> ItemStatus:
    ids = [c.id for c in claims_of(finding)]
    return ItemStatus(
        item=finding.item,
        points=[
            point("audit", "e2a406a48", dict.fromkeys(ids, R)),
            point("release", newest, dict.fromkeys(ids, R)),
        ],
    )


def install(root: Path, finding: Finding, status: ItemStatus) -> None:
    """Write ``status`` into a test's checkout (``findings/status/NN.json``)."""
    assert status.item == finding.item
    path = status_path(root, status.item)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_status(status), encoding="utf-8")
