"""The status data: verdicts derived from claims, the release that fixed a claim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from artbot.status import (
    ClaimResult,
    ClaimVerdict,
    ItemStatus,
    StatusError,
    StatusPoint,
    Verdict,
    derive,
    dump_status,
    load_status,
)

R, F, N = ClaimVerdict.reproduced, ClaimVerdict.fixed, ClaimVerdict.not_checked


@pytest.mark.parametrize(
    ("claims", "verdict"),
    [
        ([R, R], Verdict.reproduced),
        ([R, F], Verdict.partial),
        ([F, F], Verdict.fixed),
        ([R, N], Verdict.reproduced),
        ([F, N], Verdict.fixed),
        ([N], Verdict.not_checked),
        ([], Verdict.not_checked),
    ],
)
def test_finding_verdict_is_derived_from_checked_claims(claims, verdict):
    assert derive(claims) is verdict


def point(source: str, label: str, **claims: ClaimVerdict) -> StatusPoint:
    return StatusPoint(
        source=source,  # type: ignore[arg-type]
        label=label,
        checked_on="2026-12-02",
        artbot_version="0.1.0",
        claims={k: ClaimResult(verdict=v) for k, v in claims.items()},
    )


def test_fixed_in_is_the_first_release_from_which_the_claim_stays_fixed():
    status = ItemStatus(
        item=9,
        points=[
            point("audit", "e2a406a48", masks=R, steps=R),
            point("release", "0.5.21", masks=F, steps=R),
            point("release", "0.5.22", masks=R, steps=R),
            point("release", "0.5.23", masks=F, steps=R),
        ],
    )
    assert status.fixed_in("masks") == "0.5.23"  # regressed in 0.5.22
    assert status.fixed_in("steps") is None
    assert status.fixed_in() is None
    assert status.newest.label == "0.5.23"
    assert status.newest.verdict is Verdict.partial
    assert status.remaining() == ["steps"]


def test_round_trip_and_bad_file(tmp_path: Path):
    status = ItemStatus(item=7, points=[point("release", "0.5.21", tis=F)])
    folder = tmp_path / "findings" / "status"
    folder.mkdir(parents=True)
    (folder / "07.json").write_text(dump_status(status))
    assert load_status(tmp_path, 7) == status
    assert load_status(tmp_path, 7).fixed_in() == "0.5.21"  # type: ignore[union-attr]
    assert load_status(tmp_path, 8) is None
    (folder / "08.json").write_text(json.dumps({"item": 8}))
    with pytest.raises(StatusError, match="08.json"):
        load_status(tmp_path, 8)
