"""#51: every fix an issue suggests is a control, and `artbot test` (the real command) judges it
fixed on the newest release.

A suggested fix is the ``[[fix]]`` of ``repros/controls/itemNN.toml`` or an
``itemNN_suggested_<what>.toml`` beside it (``repros/controls/README.md``). Each one that has
edits for the newest release is applied to a copy of that release, written as the unified diff a
maintainer would paste, and run through ``artbot test --item N --patch``: it must exit 0 with
"fixed", or the issue stops suggesting it. A suggestion file quotes the issue's words for it
(``suggestion``), found in the item's record, so a control cannot outlive the suggestion.

Each case runs the item's check and regression test twice, confined (10-60 s).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.records.catalog import load_catalog
from artbot.verify.code import checkable
from tests.helpers.controls import (
    CONTROLS,
    BadControl,
    Suggested,
    controlled_copy,
    load_suggested,
    suggested_fixes,
)
from tests.helpers.patchdiff import RELEASE, make_diff
from tests.helpers.wheels import default_wheels

REPO = Path(__file__).resolve().parents[2]
NO_TOKEN = {k: v for k, v in os.environ.items() if "TOKEN" not in k.upper()}
CATALOG = load_catalog(REPO)
CHECKED = {f.item for f in checkable(CATALOG)}


def _on_newest() -> list[Suggested]:
    return [s for s in suggested_fixes() if s.edits(RELEASE) and s.item in CHECKED]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def as_diff(release_root: Path, patched: Path) -> str:
    """The files a control wrote in ``patched`` (its edited files are real files; the rest are
    links to the release) as ``git diff`` prints them in ART's repository."""
    out = []
    for path in sorted((patched / "art").rglob("*.py")):
        if path.is_symlink() or any(p.is_symlink() for p in path.parents):
            continue
        rel = path.relative_to(patched)
        old = (release_root / rel).read_text(encoding="utf-8")
        new = path.read_text(encoding="utf-8")
        if old != new:
            out.append(make_diff(f"src/{rel.as_posix()}", old, new))
    return "".join(out)


@pytest.mark.network
@pytest.mark.parametrize("suggested", _on_newest(), ids=lambda s: s.name)
def test_artbot_test_judges_every_suggested_fix_fixed(suggested: Suggested, tmp_path: Path) -> None:
    release_root = default_wheels().tree(RELEASE)
    patched = controlled_copy(release_root, tmp_path / "patched", suggested.edits(RELEASE))
    diff = tmp_path / f"{suggested.name}.diff"
    diff.write_text(as_diff(release_root, patched), encoding="utf-8")
    result = CliRunner().invoke(
        cli,
        ["--root", str(REPO), "test", "--item", str(suggested.item), "--patch", str(diff)],
        env=NO_TOKEN,
    )
    assert result.exit_code == 0 and "**fixed" in result.output, (
        f"{suggested.name}: the issue suggests this fix, and `artbot test` does not judge it "
        f"fixed on {RELEASE}:\n{result.output}"
    )


def test_every_item_open_on_the_newest_release_suggests_a_fix_that_is_tested() -> None:
    """An item whose check finds it open on the newest release ships at least one suggested fix
    with edits for it (or the test above would have nothing to run)."""
    from artbot.status import load_status

    tested = {s.item for s in _on_newest()}
    for item in sorted(CHECKED):
        status = load_status(REPO, item)
        point = None if status is None else status.releases()[-1]
        still_open = point is None or any(
            c.verdict.value == "reproduced" for c in point.claims.values()
        )
        if still_open:
            assert item in tested, f"item {item} is open on {RELEASE} but no fix is tested"


@pytest.mark.parametrize(
    "path", sorted(CONTROLS.glob("item*_suggested_*.toml")), ids=lambda p: p.stem
)
def test_a_suggestion_control_quotes_its_records_suggestion(path: Path) -> None:
    suggested = load_suggested(path)
    record = CATALOG.root / CATALOG.files[suggested.item]
    said = _norm(record.read_text(encoding="utf-8"))
    assert suggested.suggestion is not None and _norm(suggested.suggestion) in said, (
        f"{path.name}: its suggestion is not in {record.name}: the issue no longer suggests it"
    )


def test_a_suggestion_control_is_validated(tmp_path: Path) -> None:
    wrong = tmp_path / "item06_suggested_x.toml"
    wrong.write_text('why = "w"\n[[fix]]\nfiles = "a.py"\nfind = "x"\nreplace = "y"\n')
    with pytest.raises(BadControl, match="suggestion: missing"):
        load_suggested(wrong)
    misnamed = tmp_path / "item06_fix.toml"
    misnamed.write_text(wrong.read_text() + 'suggestion = "s"\n')
    with pytest.raises(BadControl, match="not named"):
        load_suggested(misnamed)
