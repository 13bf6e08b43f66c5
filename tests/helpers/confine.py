"""A crafted release's targets: the catalog of item 7 alone, the canary token it hunts for, and
a release check recorded with its wheel's digest. Shared by the tests of verify's confinement
(tests/verify/); the fixture ``place``, a folder every user can read, is in
tests/verify/conftest.py."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from artbot.records.catalog import load_catalog
from artbot.status import ClaimResult, ClaimVerdict, ItemStatus, StatusPoint, dump_status
from artbot.verify.apart import verify_code_apart
from artbot.verify.code import CodeResult
from artbot.verify.limits import Limits
from artbot.verify.tree import open_tree
from tests.helpers.wheels import default_wheels

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


ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO)}


def tree_with(folder: Path, loss: str) -> Path:
    tree = folder / "unpacked"
    (tree / "art").mkdir(parents=True, exist_ok=True)
    (tree / "art" / "__init__.py").write_text("")
    (tree / "art" / "loss.py").write_text(loss)
    return tree


# Item 7's claim as a split property (issue #53): the example attack 4's patches attack.
SPLIT = REPO / "tests" / "fixtures" / "split" / "item07_split.py"
SPLIT_CLAIM = "policy-ratio-applied-twice"


def split_item7(place: Path, version: str, appended: str = "") -> Path:
    """A checkout in ``place`` whose item 7 repro is the split example, and a tree of
    ``version``'s ``art`` package with ``appended`` at the end of its loss.py."""
    root = catalog(place)
    shutil.copy2(SPLIT, root / "repros" / "item07_tis_fallback.py")
    tree = place / "t" / "unpacked"
    shutil.copytree(default_wheels().package(version), tree / "art")
    loss = tree / "art" / "loss.py"
    loss.write_text(loss.read_text(encoding="utf-8") + appended, encoding="utf-8")
    return tree


def run_apart(
    folder: Path, tree: Path, limits: Limits | None = None, timeout_s: float = 120
) -> tuple[list[CodeResult], str]:
    root = folder / "checkout" if (folder / "checkout").exists() else catalog(folder)
    cat = load_catalog(root)
    said: list[str] = []
    results = verify_code_apart(
        cat, open_tree(tree, cat.audit), env=ENV, limits=limits, timeout_s=timeout_s,
        say=said.append,
    )  # fmt: skip
    return results, " ".join(said)


def confined_here(said: str) -> None:
    if "ran confined" not in said:
        pytest.skip(f"no confinement here: {said}")
