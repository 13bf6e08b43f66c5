"""A crafted release's targets: the catalog of item 7 alone, the canary token it hunts for, and
a release check recorded with its wheel's digest. Shared by the tests of verify's confinement
(tests/verify/); the fixture ``place``, a folder every user can read, is in
tests/verify/conftest.py."""

from __future__ import annotations

import shutil
from pathlib import Path

from artbot.status import ClaimResult, ClaimVerdict, ItemStatus, StatusPoint, dump_status

REPO = Path(__file__).resolve().parents[2]
CANARY = "ghp_CONFINECANARY0123456789abcdef"


def catalog(place: Path) -> Path:
    """Item 7 alone (its check imports art/loss.py), as a checkout."""
    root = place / "checkout"
    shutil.copytree(REPO / "repros", root / "repros")
    shutil.copytree(REPO / "templates", root / "templates")
    (root / "findings").mkdir()
    for name in ("audit.yaml", "07-tis-fallback.yaml"):
        shutil.copy2(REPO / "findings" / name, root / "findings" / name)
    return root


def record_pin(root: Path, version: str, sha256: str) -> None:
    """A release check of ``version`` recorded in findings/status/, with its wheel's digest."""
    point = StatusPoint(
        source="release",
        label=version,
        checked_on="2026-01-01",
        artbot_version="0",
        how="recorded by a test",
        claims={"c": ClaimResult(verdict=ClaimVerdict.not_checked, detail="")},
        wheel_sha256=sha256,
    )
    path = root / "findings" / "status" / "07.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_status(ItemStatus(item=7, points=[point])), encoding="utf-8")
