"""Fake fixes, real fixes and harmless edits that every ART check must judge right (issue #33).

Each TOML file of ``repros/controls/adversarial/`` is one control (see the README there): edits
to a copy of a release, and the verdicts the item's check must then give. A fake fix (text that
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
from artbot.verify.code import CodeStatus, checkable
from tests.helpers.controls import (
    ADVERSARIAL,
    ADVERSARIAL_KINDS,
    ROOT,
    BadControl,
    check,
    claim_verdicts,
    controlled_copy,
    load_adversarial,
    recorded,
)
from tests.helpers.wheels import ArtWheels

# Every checked item, artbot's follow-ups (401, 801, 1001) included.
ITEMS = tuple(f.item for f in checkable(load_catalog(ROOT)))
FOLLOW_UPS = tuple(f.item for f in checkable(load_catalog(ROOT)) if f.is_follow_up)

CONTROL_FILES = sorted(ADVERSARIAL.glob("*.toml"))


def _cases() -> list[Any]:
    out = []
    for path in CONTROL_FILES:
        control = load_adversarial(path)
        match = re.match(r"item(\d+)_", path.name)
        if control.items == "all":
            items = ITEMS
        elif isinstance(control.items, tuple):  # harmless: a rewrite some items' checks read
            items = control.items
        else:
            assert match is not None, f"{path.name}: name it itemNN_<what>"
            items = (int(match.group(1)),)
        for version in control.releases:
            out.append(pytest.param(path, version, items, id=f"{path.stem}-{version}"))
    return out


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog(ROOT)


def test_every_item_has_two_fakes_and_every_control_says_what_it_is() -> None:
    kinds: dict[int, list[str]] = {}
    assert CONTROL_FILES, f"no controls in {ADVERSARIAL}"
    assert sorted(p.name for p in ADVERSARIAL.glob("*.py")) == [], "a control is a .toml file"
    for path in CONTROL_FILES:
        control = load_adversarial(path)
        assert control.kind in ADVERSARIAL_KINDS, path.name
        assert "artbot's" in control.why, path.name
        assert control.edits and control.releases, path.name
        match = re.match(r"item(\d+)_(fake|half|real)_", path.name)
        if control.kind == "harmless":
            assert control.expect is None, path.name
            assert control.items == "all" or set(control.items or ()) <= set(ITEMS), path.name
            continue
        assert match is not None, f"{path.name}: name it itemNN_fake_/half_/real_<what>"
        kinds.setdefault(int(match.group(1)), []).append(control.kind)
    for item in ITEMS:
        assert kinds.get(item, []).count("fake") >= 2, f"item {item}: fewer than two fake fixes"
    for item in FOLLOW_UPS:  # open on every release: only a control can show a fix flips it
        assert "real" in kinds.get(item, []), f"follow-up {item}: no real fix"


HEAD = 'why = "x"\nkind = "fake"\nreleases = ["0.5.23"]\n'
EDIT = '[[edits]]\nfiles = "a"\nfind = "b"\n'


@pytest.mark.parametrize(
    ("text", "error"),
    [
        pytest.param(HEAD + EDIT, "edits[1]: a table of exactly", id="edit-without-replace"),
        pytest.param(HEAD + 'eidts = "x"\n' + EDIT, "eidts: unknown key", id="unknown-key"),
        pytest.param(HEAD.replace("fake", "fix") + EDIT, "kind: one of", id="wrong-kind"),
        pytest.param(HEAD.replace('["0.5.23"]', "0.5") + EDIT, "releases: a", id="not-an-array"),
        pytest.param(
            HEAD + EDIT + 'replace = ""\n[expect]\nc = "gone"\n', "expect.c", id="verdict"
        ),
        pytest.param(EDIT + 'replace = ""\n', "why: missing", id="missing-key"),
    ],
)
def test_a_malformed_control_is_named_with_its_key(text: str, error: str, tmp_path: Path) -> None:
    path = tmp_path / "item01_fake_bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BadControl, match=re.escape(f"{path}: {error}")):
        load_adversarial(path)


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
    control = load_adversarial(path)
    root = controlled_copy(art_wheels.tree(version), tmp_path / "copy", control.edits)
    for item in items:
        result = check(catalog, root, item, f"{version} + {path.stem}")
        assert result.status is not CodeStatus.could_not_run, (item, result.detail)
        got = claim_verdicts(result)
        expected = control.expect
        if expected is None:
            expected = recorded(catalog, item, version)
            assert expected is not None, f"item {item}: no verdicts recorded for {version}"
        assert got == expected, (item, got, f"seed {result.seed}", result.detail)
