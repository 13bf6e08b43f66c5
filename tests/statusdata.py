"""Status records built in tests: hand-written, never measured.

The claims of items 7 and 9 are taken from the catalog when it declares them; until every
YAML does, the claims below stand in (the audit's words, shortened). The verdicts are the
shape ``artbot verify --record`` writes, chosen per test; they are not measurements and are
only ever written to a test's temporary checkout.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from artbot.models import Claim, Finding
from artbot.status import (
    ClaimResult,
    ClaimVerdict,
    ItemStatus,
    StatusPoint,
    dump_status,
    status_path,
)

R, F, N = ClaimVerdict.reproduced, ClaimVerdict.fixed, ClaimVerdict.not_checked

STAND_INS: dict[int, list[dict[str, str]]] = {
    7: [
        {
            "id": "tis-uses-policy-ratio",
            "text": "Without original_logprobs, TIS multiplies the policy loss by the clamped "
            "policy ratio.",
            "symptom": "TIS without original_logprobs reweights by the policy ratio",
        }
    ],
    9: [
        {
            "id": "wrong-per-datum-masks",
            "text": "Each datum's mask lets sibling branches into its context.",
            "symptom": "Legacy Tinker service builds per-datum masks that leak sibling branches",
        },
        {
            "id": "optimizer-step-per-row",
            "text": "optim_step_async is called once per packed row instead of once per step.",
            "symptom": "Legacy Tinker service steps the optimizer once per packed row",
        },
    ],
}


def claims_of(finding: Finding) -> list[Claim]:
    if finding.claims:
        return list(finding.claims)
    return [Claim(**c) for c in STAND_INS[finding.item]]


def with_claims(finding: Finding) -> Finding:
    return finding.model_copy(update={"claims": claims_of(finding)})


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
    """Write ``status`` into a test's checkout, and the stand-in claims into its YAML."""
    path = status_path(root, status.item)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_status(status), encoding="utf-8")
    [yml] = sorted((root / "findings").glob(f"{finding.item:02d}-*.yaml"))
    text = yml.read_text(encoding="utf-8")
    if finding.claims or "\nclaims:" in text:
        return
    block = yaml.safe_dump({"claims": STAND_INS[finding.item]}, sort_keys=False, width=200)
    yml.write_text(text.rstrip("\n") + "\n" + block, encoding="utf-8")
