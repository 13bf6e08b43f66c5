"""Controls for ART checks: a release's copy with an item's fix applied (or undone).

API, for any test (the integrator may move it to conftest; nothing here is a fixture):

- ``load_control(item) -> Control | None``: ``repros/controls/itemNN.toml`` (see its README),
  validated as below, or None when the item has none.
- ``suggested_fixes() -> list[Suggested]``: every fix an issue suggests, as edits: the
  ``[[fix]]`` of each ``itemNN.toml``, and each
  ``itemNN_suggested_<what>.toml`` (the README's convention), validated as below.
- ``load_adversarial(path) -> AdversarialControl``: one TOML file of
  ``repros/controls/adversarial/`` (``ADVERSARIAL``; its format is in the README there).
  Both are validated: an unknown or missing key, or a value of the wrong kind, raises
  ``BadControl`` naming the file and the key.
- ``Control.edits(kind, version) -> list[Edit]``: ``kind`` is ``"fix"`` or ``"unfix"``: the
  ``[[fix]]`` / ``[[unfix]]`` edits, in order, that name ``version`` in their ``releases`` or
  name no releases.
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
from artbot.verify.rejudge import draw
from artbot.verify.tree import open_tree

ROOT = Path(__file__).resolve().parents[2]
CONTROLS = ROOT / "repros" / "controls"
ADVERSARIAL = CONTROLS / "adversarial"

Edit = tuple[str, str, str]  # (glob under art/, regex, replacement)


class ControlDoesNotApply(AssertionError):
    """An edit of a control found nothing to change in a release."""


class BadControl(ValueError):
    """A control's file does not hold what the format says."""


@dataclass(frozen=True)
class Control:
    """``repros/controls/itemNN.toml``: the item's fix, and the undoing of a release's fix."""

    item: int
    doc: str  # its ``why``: whose fix it applies
    fix: tuple[tuple[Edit, tuple[str, ...] | None], ...]  # (edit, its releases; None: all)
    unfix: tuple[tuple[Edit, tuple[str, ...] | None], ...]

    def edits(self, kind: str, version: str) -> list[Edit]:
        chosen = {"fix": self.fix, "unfix": self.unfix}[kind]
        return [edit for edit, releases in chosen if releases is None or version in releases]


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


class _Toml:
    """A control's TOML file, read with its keys checked; each error names the file and key."""

    def __init__(self, path: Path, known: tuple[str, ...], required: tuple[str, ...]) -> None:
        self.path = path
        try:
            self.data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as error:
            raise BadControl(f"{path}: not TOML: {error}") from error
        for key in self.data:
            if key not in known:
                raise self.bad(key, f"unknown key (the keys: {', '.join(known)})")
        for key in required:
            if key not in self.data:
                raise self.bad(key, "missing")

    def bad(self, key: str, what: str) -> BadControl:
        return BadControl(f"{self.path}: {key}: {what}")

    def text(self, key: str, value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise self.bad(key, f"a non-empty string expected, got {value!r}")
        return value

    def array(self, key: str, value: Any) -> list[Any]:
        if not isinstance(value, list) or not value:
            raise self.bad(key, f"a non-empty array expected, got {value!r}")
        return value

    def releases(self, key: str, value: Any) -> tuple[str, ...]:
        return tuple(self.text(key, r) for r in self.array(key, value))

    def edits(self, key: str, *, per_release: bool) -> list[tuple[Edit, tuple[str, ...] | None]]:
        """The edit tables under ``key``; with ``per_release``, each may name its ``releases``."""
        out = []
        for n, edit in enumerate(self.array(key, self.data[key]), 1):
            where = f"{key}[{n}]"
            allowed = {*_EDIT_KEYS, "releases"} if per_release else set(_EDIT_KEYS)
            if not isinstance(edit, dict) or not set(_EDIT_KEYS) <= set(edit) <= allowed:
                keys = ", ".join(_EDIT_KEYS) + (" (and releases)" if per_release else "")
                raise self.bad(where, f"a table of exactly {keys} expected, got {edit!r}")
            files = self.text(f"{where}.files", edit["files"])
            find = self.text(f"{where}.find", edit["find"])
            replace = edit["replace"]
            if not isinstance(replace, str):
                raise self.bad(f"{where}.replace", f"a string expected, got {replace!r}")
            try:
                re.compile(find, re.MULTILINE)
            except re.error as error:
                raise self.bad(f"{where}.find", f"not a regular expression: {error}") from error
            releases = edit.get("releases")
            if releases is not None:
                releases = self.releases(f"{where}.releases", releases)
            out.append(((files, find, replace), releases))
        return out


def load_control(item: int, folder: Path = CONTROLS) -> Control | None:
    """``repros/controls/itemNN.toml`` (its README has the format), or None when the item has
    none."""
    path = folder / f"item{item:02d}.toml"
    if not path.is_file():
        return None
    toml = _Toml(path, ("why", "fix", "unfix"), ("why",))
    fix, unfix = (
        tuple(toml.edits(kind, per_release=True)) if kind in toml.data else ()
        for kind in ("fix", "unfix")
    )
    return Control(item, toml.text("why", toml.data["why"]).strip(), fix, unfix)


@dataclass(frozen=True)
class Suggested:
    """One fix an issue suggests, as a control: ``name`` its file, ``suggestion`` the issue's
    words for it (``None`` for an ``itemNN.toml``, whose ``why`` names it)."""

    item: int
    name: str
    suggestion: str | None
    fix: tuple[tuple[Edit, tuple[str, ...] | None], ...]

    def edits(self, version: str) -> list[Edit]:
        return [edit for edit, releases in self.fix if releases is None or version in releases]


_SUGGESTED_NAME = re.compile(r"^item(\d{2,4})_suggested_[a-z0-9_]+$")


def load_suggested(path: Path) -> Suggested:
    """``itemNN_suggested_<what>.toml``: ``why``, ``suggestion`` and ``[[fix]]`` edits."""
    found = _SUGGESTED_NAME.match(path.stem)
    if found is None:
        raise BadControl(f"{path}: not named itemNN_suggested_<what>.toml")
    toml = _Toml(path, ("why", "suggestion", "fix"), ("why", "suggestion", "fix"))
    toml.text("why", toml.data["why"])
    suggestion = toml.text("suggestion", toml.data["suggestion"]).strip()
    fix = tuple(toml.edits("fix", per_release=True))
    return Suggested(int(found[1]), path.stem, suggestion, fix)


def suggested_fixes(folder: Path = CONTROLS) -> list[Suggested]:
    """Every suggested fix: the ``[[fix]]`` of each ``itemNN.toml`` (its ``why`` says whose),
    then each ``itemNN_suggested_*.toml``."""
    out = []
    for path in sorted(folder.glob("item*.toml")):
        if "_suggested_" in path.stem:
            continue
        control = load_control(int(path.stem.removeprefix("item")), folder)
        if control is not None and control.fix:
            out.append(Suggested(control.item, path.stem, None, control.fix))
    out += [load_suggested(p) for p in sorted(folder.glob("item*_suggested_*.toml"))]
    return out


def load_adversarial(path: Path) -> AdversarialControl:
    """The adversarial control in the TOML file at ``path``, its fields checked."""
    toml = _Toml(
        path,
        ("why", "kind", "releases", "items", "edits", "expect"),
        ("why", "kind", "releases", "edits"),
    )
    data = toml.data
    kind = toml.text("kind", data["kind"])
    if kind not in ADVERSARIAL_KINDS:
        raise toml.bad("kind", f"one of {', '.join(ADVERSARIAL_KINDS)} expected, got {kind!r}")
    releases = toml.releases("releases", data["releases"])
    edits = tuple(edit for edit, _ in toml.edits("edits", per_release=False))
    expect = data.get("expect")
    if expect is not None:
        if not isinstance(expect, dict) or not expect:
            raise toml.bad("expect", f"a table of claim = verdict expected, got {expect!r}")
        for claim, verdict in expect.items():
            if verdict not in _VERDICTS:
                raise toml.bad(f"expect.{claim}", f"one of {_VERDICTS} expected, got {verdict!r}")
    items = data.get("items")
    if (items is None) != (kind != "harmless"):
        raise toml.bad("items", "a harmless control names its items; no other control does")
    if items is not None and items != "all":
        if not isinstance(items, list) or not items or not all(type(i) is int for i in items):
            raise toml.bad("items", f'"all" or an array of item numbers expected, got {items!r}')
        items = tuple(items)
    return AdversarialControl(
        path.stem, toml.text("why", data["why"]), kind, releases, edits, expect, items
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


def check(
    catalog: Catalog, root: Path, item: int, label: str, seed: int | None = None
) -> CodeResult:
    """Item ``item``'s check on ``root``, on the inputs artbot draws (``seed``, else a secret
    one), each verdict artbot's (artbot/verify/rejudge.py), as ``verify`` runs it."""
    finding = next(f for f in catalog.findings if f.item == item)
    plan = draw(catalog, [finding], seed)
    tree = open_tree(root, catalog.audit, label=label)
    return plan.judge(run_check(catalog, tree, finding, plan.inputs.get(item)))


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
