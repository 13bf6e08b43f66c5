"""Unified diffs, parsed and applied in pure Python: no ``patch`` or ``git apply`` ever sees
untrusted input.

A diff is read as ``git apply`` reads it in ART's repository: ``git diff`` (``diff --git
a/src/art/x.py b/src/art/x.py``, ``---``/``+++``, hunks), ``git format-patch`` mail (the message
and diffstat before the first file, the ``-- `` signature after the last), ``diff -u`` and
``diff -ruN OLD NEW`` of two checkouts (each file's ``diff -ru ...`` line, ``Only in`` and
``Common subdirectories`` lines between files, timestamps after the paths). As ``git apply``'s
default ``-p1``, each path's first folder is dropped whatever its name (``a/``, ``ART.orig/``);
what remains is under ``src/art/`` (or ``art/``, two unpacked wheels: the same file). Without a
``diff --git`` header, a file whose hunks all start at ``-0,0`` is created and one whose hunks
all end at ``+0,0`` deleted (``diff -N``), as ``git apply`` reads them.
Refused: a path outside ``src/art/``, absolute, with ``..``, quoted or with characters a source
path of ART's does not have; renames and copies; binary patches; modes other than a regular
file's (a symlink's ``120000``, a submodule's ``160000``); a file patched twice. Applying
refuses, naming the hunk, when a hunk's context and removed lines are not in the file (it may
sit a few lines off, as ``git apply`` allows; no fuzz).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SOURCE_ROOT = "src/art/"
WHEEL_PACKAGE = "art"
REGULAR_MODES = ("100644", "100755")

_GIT_HEAD_RE = re.compile(r"^diff --git (\S+) (\S+)$")
_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")
_PATH_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-/]*$")
_MODE_RE = re.compile(r"^(new file mode|deleted file mode|old mode|new mode) (\d+)$")
_REFUSED_HEADERS = {
    "rename from": "renames",
    "rename to": "renames",
    "copy from": "copies",
    "copy to": "copies",
    "similarity index": "renames",
    "dissimilarity index": "renames",
    "GIT binary patch": "binary patches",
    "Binary files": "binary patches",
}
_IGNORED_HEADERS = ("index ",)
# Lines ``diff -r`` and ``git format-patch`` print between files, which ``git apply`` skips:
# each file's command line, and what ``diff -r`` says of files only one side has.
_BETWEEN_FILES = ("diff ", "Only in ", "Common subdirectories: ")
MAIL_SIGNATURE = "-- "


class DiffRefused(ValueError):
    """The diff is malformed or asks for something artbot does not apply; one line."""


class DoesNotApply(ValueError):
    """A hunk's lines are not in the file; ``hunk`` is its text, to show."""

    def __init__(self, message: str, hunk: str = ""):
        super().__init__(message)
        self.hunk = hunk


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    lines: tuple[str, ...]  # each with its tag: " ", "-" or "+"
    old_eof_newline: bool = True  # False: "\ No newline at end of file" after an old line
    new_eof_newline: bool = True

    @property
    def span(self) -> str:
        """``-12,6 +12,7``: the hunk's header without its ``@@`` (a refusal names it so)."""
        return f"-{self.old_start},{self.old_len} +{self.new_start},{self.new_len}"

    def text(self) -> str:
        return "\n".join([f"@@ {self.span} @@", *self.lines])


@dataclass(frozen=True)
class FilePatch:
    path: str  # src/art/..., as in ART's repository
    hunks: tuple[Hunk, ...]
    created: bool = False
    deleted: bool = False

    @property
    def wheel_path(self) -> str:
        """The file in an unpacked wheel: ``art/...``."""
        return WHEEL_PACKAGE + "/" + self.path.removeprefix(SOURCE_ROOT)


def check_path(raw: str, side: str = "") -> str:
    """``a/src/art/x.py`` as ``src/art/x.py``: the first folder dropped, whatever its name, as
    ``git apply -p1`` does (``side`` names the path in a refusal); a wheel's ``art/x.py`` is
    ``src/art/x.py``. Else :class:`DiffRefused`."""
    shown = raw[:80]
    if raw.startswith('"'):
        raise DiffRefused(f"{shown}: quoted paths are not applied")
    if raw.startswith("/") or "\\" in raw:
        raise DiffRefused(f"{shown}: absolute paths are not applied")
    first, slash, path = raw.partition("/")
    if not slash or first in ("", ".", ".."):
        raise DiffRefused(f"{shown}: expected a {side or 'path'} such as a/src/art/... (-p1)")
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise DiffRefused(f"{shown}: a path with an empty, `.` or `..` part is not applied")
    if not _PATH_RE.match(path):
        raise DiffRefused(f"{shown}: the path has characters ART's sources do not use")
    if path.startswith(WHEEL_PACKAGE + "/"):  # two unpacked wheels diffed: the same file
        path, parts = "src/" + path, ["src", *parts]
    if not path.startswith(SOURCE_ROOT) or len(parts) < 3:
        raise DiffRefused(f"{path}: outside {SOURCE_ROOT}; only ART's package is patched")
    return path


class _Parser:
    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.n = 0
        self.files: list[FilePatch] = []

    def parse(self) -> list[FilePatch]:
        while self.n < len(self.lines):
            line = self.lines[self.n]
            if line.startswith("diff --git ") or (line.startswith("--- ") and self._plus_next()):
                self.files.append(self._file())
            elif self.files and line == MAIL_SIGNATURE:
                break  # git format-patch's signature: the rest is git's version
            elif line.startswith("Binary files ") and line.endswith(" differ"):
                raise DiffRefused(f"binary patches are not applied ({line[:60]!r})")
            elif self.files and line.startswith(_BETWEEN_FILES):
                self.n += 1
            elif self.files and line.strip():
                raise DiffRefused(f"line {self.n + 1}: unexpected {line[:60]!r} between files")
            else:
                self.n += 1  # text before the first file (a message), or a blank line
        if not self.files:
            raise DiffRefused("no file in the diff (expected `diff --git a/src/art/...`)")
        seen = [f.path for f in self.files]
        if dupes := sorted({p for p in seen if seen.count(p) > 1}):
            raise DiffRefused(f"{dupes[0]} is patched twice")
        return self.files

    def _plus_next(self) -> bool:
        """A ``--- `` line starts a file only before ``+++ `` (as for ``git apply``); before
        the first file it may be a line of a mail's message."""
        following = self.lines[self.n + 1] if self.n + 1 < len(self.lines) else ""
        return following.startswith("+++ ") or bool(self.files)

    def _file(self) -> FilePatch:
        git_path = None
        created = deleted = False
        line = self.lines[self.n]
        if line.startswith("diff --git "):
            head = _GIT_HEAD_RE.match(line)
            if head is None:
                raise DiffRefused(f"line {self.n + 1}: a `diff --git` line artbot cannot read")
            git_path = check_path(head[1], "old path")
            if check_path(head[2], "new path") != git_path:
                raise DiffRefused(f"{git_path}: renames are not applied")
            self.n += 1
            while self.n < len(self.lines) and not self.lines[self.n].startswith(
                ("--- ", "diff --git ")
            ):
                created, deleted = self._header(self.lines[self.n], created, deleted)
                self.n += 1
        if self.n >= len(self.lines) or not self.lines[self.n].startswith("--- "):
            raise DiffRefused(f"{git_path}: no ---/+++ lines (a mode-only change is not applied)")
        old = self.lines[self.n][4:].split("\t")[0].rstrip()
        new_line = self.lines[self.n + 1] if self.n + 1 < len(self.lines) else ""
        if not new_line.startswith("+++ "):
            raise DiffRefused(f"line {self.n + 2}: expected `+++ b/...` after `--- {old[:60]}`")
        new = new_line[4:].split("\t")[0].rstrip()
        self.n += 2
        created, deleted = created or old == "/dev/null", deleted or new == "/dev/null"
        if created and deleted:
            raise DiffRefused("a file both created and deleted")
        path = check_path(new, "new path") if not deleted else check_path(old, "old path")
        if not created and not deleted and check_path(old, "old path") != path:
            raise DiffRefused(f"{path}: renames are not applied")
        if git_path is not None and git_path != path:
            raise DiffRefused(f"{path}: the --- / +++ paths are not the diff --git line's")
        hunks = []
        while self.n < len(self.lines) and self.lines[self.n].startswith("@@"):
            hunks.append(self._hunk(path))
        if not hunks:
            raise DiffRefused(f"{path}: no hunk")
        if git_path is None and not (created or deleted):  # diff -N: an empty side
            created = all(h.old_start == 0 and h.old_len == 0 for h in hunks)
            deleted = all(h.new_start == 0 and h.new_len == 0 for h in hunks)
        return FilePatch(path, tuple(hunks), created=created, deleted=deleted)

    def _header(self, line: str, created: bool, deleted: bool) -> tuple[bool, bool]:
        for start, what in _REFUSED_HEADERS.items():
            if line.startswith(start):
                raise DiffRefused(f"{what} are not applied ({line[:60]!r})")
        mode = _MODE_RE.match(line)
        if mode is not None:
            if mode[2] not in REGULAR_MODES:
                raise DiffRefused(f"mode {mode[2]} (not a regular file's) is not applied")
            if mode[1] in ("old mode", "new mode"):
                raise DiffRefused("mode changes are not applied")
            return created or mode[1] == "new file mode", deleted or mode[1] == "deleted file mode"
        if line.startswith(_IGNORED_HEADERS):
            return created, deleted
        raise DiffRefused(f"line {self.n + 1}: unexpected {line[:60]!r} in a file's header")

    def _hunk(self, path: str) -> Hunk:
        head = _HUNK_RE.match(self.lines[self.n])
        if head is None:
            shown = self.lines[self.n][:60]
            raise DiffRefused(f"{path}: a hunk header artbot cannot read: {shown}")
        old_start, new_start = int(head[1]), int(head[3])
        old_len = int(head[2]) if head[2] is not None else 1
        new_len = int(head[4]) if head[4] is not None else 1
        self.n += 1
        lines: list[str] = []
        old_left, new_left = old_len, new_len
        old_nl = new_nl = True
        last = ""
        while old_left > 0 or new_left > 0:
            if self.n >= len(self.lines):
                raise DiffRefused(f"{path}: the hunk {head[0][:40]} ends early")
            line = self.lines[self.n]
            tag = line[:1] if line else " "  # a blank context line lost its space
            if tag == "\\":
                old_nl, new_nl = self._no_newline(last, old_nl, new_nl)
                self.n += 1
                continue
            if tag == " " and old_left > 0 and new_left > 0:
                old_left, new_left = old_left - 1, new_left - 1
            elif tag == "-" and old_left > 0:
                old_left -= 1
            elif tag == "+" and new_left > 0:
                new_left -= 1
            else:
                raise DiffRefused(f"{path}: line {self.n + 1} does not fit its hunk's counts")
            lines.append(line if line else " ")
            last = tag
            self.n += 1
        if self.n < len(self.lines) and self.lines[self.n].startswith("\\"):
            old_nl, new_nl = self._no_newline(last, old_nl, new_nl)
            self.n += 1
        if old_start == 0 and old_len:
            raise DiffRefused(f"{path}: a hunk at old line 0")
        return Hunk(old_start, old_len, new_start, new_len, tuple(lines), old_nl, new_nl)

    @staticmethod
    def _no_newline(last: str, old_nl: bool, new_nl: bool) -> tuple[bool, bool]:
        return (False if last in (" ", "-") else old_nl), (False if last in (" ", "+") else new_nl)


def parse_diff(text: str) -> list[FilePatch]:
    """The files of a unified diff; :class:`DiffRefused` names the first problem."""
    return _Parser(text).parse()


MAX_OFFSET = 200  # lines a hunk may have moved (git apply searches the whole file; so do we)


def apply_text(original: str | None, patch: FilePatch) -> str | None:
    """``original`` (None: no such file) with ``patch`` applied; None when it deletes the file.
    :class:`DoesNotApply` names the first hunk that does not fit."""
    if patch.created:
        if original is not None:
            raise DoesNotApply(f"{patch.path} already exists; the patch creates it")
        original = ""
    elif original is None:
        raise DoesNotApply(f"{patch.path} is not in this release")
    lines = original.splitlines()
    ends_nl = original.endswith("\n") or not original
    drift = 0  # how far the last hunk sat from where its header said
    floor = 0
    for hunk in patch.hunks:
        old = [ln[1:] for ln in hunk.lines if ln[0] in " -"]
        new = [ln[1:] for ln in hunk.lines if ln[0] in " +"]
        # Earlier hunks are applied already: the new side's line numbers are this text's.
        # (A hunk that only removes names the line before the removal.)
        want = max(hunk.new_start - (1 if hunk.new_len else 0), 0) + drift
        at = _find(lines, old, want, floor)
        if at is None:
            raise DoesNotApply(
                f"{patch.path}: the hunk {hunk.span} does not apply (its context and removed lines "
                "are not in the file)",
                hunk.text(),
            )
        at_end = at + len(old) == len(lines)
        lines[at : at + len(old)] = new
        floor = at + len(new)
        drift = at - max(hunk.new_start - (1 if hunk.new_len else 0), 0)
        if at_end:
            ends_nl = hunk.new_eof_newline
    if patch.deleted:
        if lines:
            raise DoesNotApply(f"{patch.path}: the patch deletes it, but lines would remain")
        return None
    text = "\n".join(lines)
    return text + "\n" if lines and ends_nl else text


def _find(lines: Sequence[str], old: Sequence[str], want: int, floor: int) -> int | None:
    """Where ``old`` sits in ``lines``: at ``want``, else the nearest place at or after
    ``floor`` (ties: the earlier)."""
    strip = [o.rstrip("\r") for o in old]

    def fits(at: int) -> bool:
        if at < floor or at + len(old) > len(lines):
            return False
        return all(lines[at + k].rstrip("\r") == strip[k] for k in range(len(old)))

    for step in range(0, max(len(lines), MAX_OFFSET) + 1):
        for at in (want - step, want + step) if step else (want,):
            if fits(at):
                return at
    return None


def apply_to_folder(folder: Path, files: Sequence[FilePatch]) -> list[str]:
    """Apply ``files`` to the unpacked wheel in ``folder`` (holding ``art/``): each
    ``src/art/X`` is written at ``art/X``. Nothing is written unless every file applies.
    Returns the wheel paths changed."""
    package = (folder / WHEEL_PACKAGE).resolve()
    results: list[tuple[Path, str | None]] = []
    for patch in files:
        target = folder / patch.wheel_path
        if not target.resolve().is_relative_to(package) or any(
            p.is_symlink() for p in [target, *target.parents] if p.is_relative_to(folder)
        ):
            raise DoesNotApply(f"{patch.path}: not a plain file inside the release's art/")
        if target.exists() and not target.is_file():
            raise DoesNotApply(f"{patch.path}: not a file in this release")
        original = target.read_text(encoding="utf-8") if target.is_file() else None
        results.append((target, apply_text(original, patch)))
    for target, text in results:
        if text is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    return [p.wheel_path for p in files]
