"""Fake fixes, real fixes and harmless edits that every ART check must judge right (issue #33).

Each file of ``repros/controls/adversarial/`` is one control (see the README there): edits to
a copy of a release, and the verdicts the item's check must then give. A fake fix (text that
names the fix, a precision no better than before, half a fix, a patch that does not do its
work) must leave the item reproduced (or partial where one claim is really fixed); a real fix
must flip it; a harmless edit must change no verdict. A wrong verdict fails here by name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from artbot.records.catalog import Catalog, load_catalog
from artbot.repro.scripts import import_script
from artbot.verify.code import CodeStatus, checkable
from tests.helpers.controls import CONTROLS, ROOT, check, claim_verdicts, controlled_copy, recorded
from tests.helpers.wheels import ArtWheels

ADVERSARIAL = CONTROLS / "adversarial"
KINDS = ("real", "fake", "harmless")
# Every checked item, artbot's follow-ups (401, 801, 1001) included.
ITEMS = tuple(f.item for f in checkable(load_catalog(ROOT)))
FOLLOW_UPS = tuple(f.item for f in checkable(load_catalog(ROOT)) if f.is_follow_up)


def _load(path: Path) -> Any:
    return import_script(path, f"_artbot_adversarial_{path.stem}")


def _cases() -> list[Any]:
    out = []
    for path in sorted(ADVERSARIAL.glob("*.py")):
        control = _load(path)
        match = re.match(r"item(\d+)_", path.name)
        if getattr(control, "ITEMS", None) == "all":
            items = ITEMS
        elif control.KIND == "harmless":  # a rewrite of the files some items' checks read
            items = tuple(control.ITEMS)
        else:
            assert match is not None, f"{path.name}: name it itemNN_<what>"
            items = (int(match.group(1)),)
        for version in control.RELEASES:
            out.append(pytest.param(path, version, items, id=f"{path.stem}-{version}"))
    return out


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog(ROOT)


def test_every_item_has_two_fakes_and_every_control_says_what_it_is() -> None:
    kinds: dict[int, list[str]] = {}
    for path in sorted(ADVERSARIAL.glob("*.py")):
        control = _load(path)
        assert control.KIND in KINDS, path.name
        assert control.__doc__ and "artbot's" in control.__doc__, path.name
        assert control.EDITS and control.RELEASES, path.name
        match = re.match(r"item(\d+)_(fake|half|real)_", path.name)
        if control.KIND == "harmless":
            assert control.EXPECT is None, path.name
            assert control.ITEMS == "all" or set(control.ITEMS) <= set(ITEMS), path.name
            continue
        assert match is not None, f"{path.name}: name it itemNN_fake_/half_/real_<what>"
        kinds.setdefault(int(match.group(1)), []).append(control.KIND)
    for item in ITEMS:
        assert kinds.get(item, []).count("fake") >= 2, f"item {item}: fewer than two fake fixes"
    for item in FOLLOW_UPS:  # open on every release: only a control can show a fix flips it
        assert "real" in kinds.get(item, []), f"follow-up {item}: no real fix"


@pytest.mark.repro
@pytest.mark.parametrize(("path", "version", "items"), _cases())
def test_the_check_is_not_fooled(
    path: Path,
    version: str,
    items: tuple[int, ...],
    catalog: Catalog,
    art_wheels: ArtWheels,
    tmp_path: Path,
) -> None:
    control = _load(path)
    root = controlled_copy(art_wheels.tree(version), tmp_path / "copy", control.EDITS)
    for item in items:
        result = check(catalog, root, item, f"{version} + {path.stem}")
        assert result.status is not CodeStatus.could_not_run, (item, result.detail)
        got = claim_verdicts(result)
        expected = control.EXPECT
        if expected is None:
            expected = recorded(catalog, item, version)
            assert expected is not None, f"item {item}: no verdicts recorded for {version}"
        assert got == expected, (item, got, result.detail)
