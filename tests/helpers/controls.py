"""Controls for ART checks: a release's copy with an item's fix applied (or undone).

API, for any test (the integrator may move it to conftest; nothing here is a fixture):

- ``load_control(item) -> Control | None``: ``repros/controls/itemNN.py`` (see its README),
  or None when the item has none.
- ``load_adversarial(path) -> AdversarialControl``: one TOML file of
  ``repros/controls/adversarial/`` (``ADVERSARIAL``; its format is in the README there),
  validated: an unknown or missing key, or a value of the wrong kind, raises ``BadControl``
  naming the file and the key.
- ``Control.edits(kind, version) -> list[Edit]``: ``kind`` is ``"fix"`` or ``"unfix"``;
  ``FIX``/``UNFIX`` are a list of edits for every release, or a dict ``{version: [...]}``.
- ``controlled_copy(release_root, dest, edits) -> Path``: ``dest`` becomes a copy of the
  unpacked release at ``release_root`` (the folder holding ``art/``) in which the files the
  edits changed are written and every other file or folder is a symlink to the release's.
  Raises ``ControlDoesNotApply`` when an edit matches nothing in the files its glob names.
- ``check(catalog, root, item, label) -> CodeResult``: the item's ``check_art`` run on the
  tree at ``root`` (``artbot.verify.code.run_check``), labelled ``label``.
- ``claim_verdicts(result) -> {claim: "reproduced" | "fixed" | "not checked"}``.
- ``recorded(catalog, item, version) -> {claim: verdict} | None``: the verdicts recorded for
  ``version`` in ``findings/status/NN.json`` (None: that release is not recorded); for an
  artbot follow-up, which has no status record, every claim reproduced.

Typical use (what tests/verify/test_controls.py does)::

    control = load_control(6)
    root = controlled_copy(release_dir, tmp / "fixed", control.edits("fix", "0.5.23"))
    assert check(catalog, root, 6, "0.5.23 + fix").status.value == "fixed"
"""

from __future__ import annotations

import os
import re
import shutil
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from artbot.records.catalog import Catalog
from artbot.repro.scripts import import_script
from artbot.status import ClaimVerdict, load_status
from artbot.verify.code import CodeResult, run_check
from artbot.verify.tree import open_tree

ROOT = Path(__file__).resolve().parents[2]
CONTROLS = ROOT / "repros" / "controls"
ADVERSARIAL = CONTROLS / "adversarial"

Edit = tuple[str, str, str]  # (glob under art/, regex, replacement)


class ControlDoesNotApply(AssertionError):
    """An edit of a control found nothing to change in a release."""


@dataclass(frozen=True)
class Control:
    item: int
    doc: str
    fix: list[Edit] | dict[str, list[Edit]]
    unfix: list[Edit] | dict[str, list[Edit]]

    def edits(self, kind: str, version: str) -> list[Edit]:
        chosen = {"fix": self.fix, "unfix": self.unfix}[kind]
        if isinstance(chosen, dict):
            return list(chosen.get(version, []))
        return list(chosen)


def load_control(item: int) -> Control | None:
    path = CONTROLS / f"item{item:02d}.py"
    if not path.is_file():
        return None
    module = import_script(path, f"_artbot_control_{item:02d}")
    return Control(
        item,
        (module.__doc__ or "").strip(),
        getattr(module, "FIX", []),
        getattr(module, "UNFIX", []),
    )


class BadControl(ValueError):
    """An adversarial control's file does not hold what the format says."""


@dataclass(frozen=True)
class AdversarialControl:
    """One file of ``repros/controls/adversarial/`` (its README has the format)."""

    name: str  # the file's stem
    why: str  # what the control is and whose fix it applies
    kind: str  # "fake", "real" or "harmless"
    releases: tuple[str, ...]
    edits: tuple[Edit, ...]
    expect: dict[str, str] | None  # None: the verdicts recorded for the release
    items: tuple[int, ...] | str | None  # a harmless control's items, or "all"; else None


ADVERSARIAL_KINDS = ("fake", "real", "harmless")
_EDIT_KEYS = ("files", "find", "replace")
_VERDICTS = tuple(v.value for v in ClaimVerdict)


def load_adversarial(path: Path) -> AdversarialControl:
    """The adversarial control in the TOML file at ``path``, its fields checked."""

    def bad(key: str, what: str) -> BadControl:
        return BadControl(f"{path}: {key}: {what}")

    def text(key: str, value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise bad(key, f"a non-empty string expected, got {value!r}")
        return value

    def array(key: str, value: Any) -> list[Any]:
        if not isinstance(value, list) or not value:
            raise bad(key, f"a non-empty array expected, got {value!r}")
        return value

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise BadControl(f"{path}: not TOML: {error}") from error
    known = ("why", "kind", "releases", "items", "edits", "expect")
    for key in data:
        if key not in known:
            raise bad(key, f"unknown key (the keys: {', '.join(known)})")
    for key in ("why", "kind", "releases", "edits"):
        if key not in data:
            raise bad(key, "missing")
    kind = text("kind", data["kind"])
    if kind not in ADVERSARIAL_KINDS:
        raise bad("kind", f"one of {', '.join(ADVERSARIAL_KINDS)} expected, got {kind!r}")
    releases = tuple(text("releases", r) for r in array("releases", data["releases"]))
    edits = []
    for n, edit in enumerate(array("edits", data["edits"]), 1):
        where = f"edits[{n}]"
        if not isinstance(edit, dict) or set(edit) != set(_EDIT_KEYS):
            raise bad(where, f"a table of exactly {', '.join(_EDIT_KEYS)} expected, got {edit!r}")
        files, find = text(f"{where}.files", edit["files"]), text(f"{where}.find", edit["find"])
        replace = edit["replace"]
        if not isinstance(replace, str):
            raise bad(f"{where}.replace", f"a string expected, got {replace!r}")
        try:
            re.compile(find, re.MULTILINE)
        except re.error as error:
            raise bad(f"{where}.find", f"not a regular expression: {error}") from error
        edits.append((files, find, replace))
    expect = data.get("expect")
    if expect is not None:
        if not isinstance(expect, dict) or not expect:
            raise bad("expect", f"a table of claim = verdict expected, got {expect!r}")
        for claim, verdict in expect.items():
            if verdict not in _VERDICTS:
                raise bad(f"expect.{claim}", f"one of {_VERDICTS} expected, got {verdict!r}")
    items = data.get("items")
    if (items is None) != (kind != "harmless"):
        raise bad("items", "a harmless control names its items; no other control does")
    if items is not None and items != "all":
        if not isinstance(items, list) or not items or not all(type(i) is int for i in items):
            raise bad("items", f'"all" or an array of item numbers expected, got {items!r}')
        items = tuple(items)
    return AdversarialControl(
        path.stem, text("why", data["why"]), kind, releases, tuple(edits), expect, items
    )


def _link_tree(src: Path, dest: Path, keep: set[Path]) -> None:
    """``dest`` as a folder of links to ``src``'s entries; the entries on the way to a path in
    ``keep`` (relative to ``src``) are real folders, and those paths are left to be written."""
    dest.mkdir(parents=True)
    for entry in sorted(src.iterdir()):
        rel = entry.relative_to(src)
        inside = {k.relative_to(rel) for k in keep if k != rel and k.is_relative_to(rel)}
        if rel in keep:
            continue
        if inside and entry.is_dir() and not entry.is_symlink():
            _link_tree(entry, dest / entry.name, inside)
        else:
            os.symlink(entry, dest / entry.name, target_is_directory=entry.is_dir())


def controlled_copy(release_root: Path, dest: Path, edits: Sequence[Edit]) -> Path:
    """A linked copy of ``release_root`` with ``edits`` applied to its ``art/`` files: the
    edited files are written, and every file or folder the edits do not reach is a link to
    the release's (a few dozen links, not one per file: making each costs time)."""
    art = release_root / "art"
    changed: dict[Path, str] = {}  # under art/ -> its text after the edits so far
    for files, find, replace in edits:
        pattern = re.compile(find, re.MULTILINE)
        hits = 0
        for path in sorted(art.glob(files)):
            rel = path.relative_to(art)
            new, n = pattern.subn(replace, changed.get(rel) or path.read_text(encoding="utf-8"))
            if n:
                hits += n
                changed[rel] = new
        if hits == 0:
            raise ControlDoesNotApply(f"{files}: {find!r} matches nothing in {release_root.name}")
    if dest.exists():
        shutil.rmtree(dest)
    _link_tree(release_root, dest, {Path("art") / rel for rel in changed})
    for rel, text in changed.items():
        (dest / "art" / rel).write_text(text, encoding="utf-8")
    return dest


def check(catalog: Catalog, root: Path, item: int, label: str) -> CodeResult:
    finding = next(f for f in catalog.findings if f.item == item)
    return run_check(catalog, open_tree(root, catalog.audit, label=label), finding)


def claim_verdicts(result: CodeResult) -> dict[str, str]:
    return {cid: claim.verdict.value for cid, claim in result.claims.items()}


def recorded(catalog: Catalog, item: int, version: str) -> dict[str, str] | None:
    """The verdicts recorded for ``version`` (None: that release is not recorded). An artbot
    follow-up has no status record: its finding reports it reproduced on each release the
    tests read (0.5.20's values among its evidence), so every claim is expected reproduced."""
    status = load_status(ROOT, item)
    if status is None:
        finding = next(f for f in catalog.findings if f.item == item)
        assert finding.is_follow_up, f"findings/status/{item:02d}.json missing"
        return {claim.id: "reproduced" for claim in finding.claims}
    point = next((p for p in status.releases() if p.label == version), None)
    return None if point is None else {cid: c.verdict.value for cid, c in point.claims.items()}


def repro(item: int) -> Any:
    """The item's repro script, imported (for its constants)."""
    path = next((ROOT / "repros").glob(f"item{item:02d}_*.py"))
    return import_script(path, f"_artbot_control_repro_{item:02d}")
