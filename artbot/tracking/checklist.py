"""Edit the artbot-owned checklist block in the tracking issue's body.

The tracking issue is written by a human; artbot owns only the text between
:data:`START_MARKER` and :data:`END_MARKER`. Pure functions: a body string in, a body string out.

Rules, so a reviewer can predict every edit:

* A body holds no block (no marker at all) or exactly one (one start marker, later one end
  marker). Anything else -- a start marker without an end, an end without a start, an end
  before the start, two blocks -- raises :class:`ChecklistError` and nothing is edited: guessing
  which marker a human meant could eat their text, and a human fixes it in one edit.
* Replacing a block rewrites only ``START_MARKER ... END_MARKER``; every byte outside, including
  text sharing a line with a marker, is kept.
* A missing block is inserted right after the "Dedicated issues" list (a line that is only
  ``Dedicated issues``, optionally as a ``#`` heading, in ``**bold**`` or with a colon, then its
  ``•``/``-``/``*``/``+``/numbered bullet lines), else at the end of the body. Blank lines are
  added around it where needed so it renders as its own block; nothing is removed.
* Line endings follow the body: CRLF when the body's first line ends in CRLF (GitHub's web
  editor saves bodies that way), else LF. An existing block keeps the ending after its start
  marker, so applying twice changes nothing.
* ``None`` (GitHub's empty body) and ``""`` are both an empty body: the result is the block alone.
* Markers are found as plain text, so a marker quoted inside a code span or fence still counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ..errors import ChecklistError

START_MARKER = "<!-- artbot:checklist:start -->"
END_MARKER = "<!-- artbot:checklist:end -->"

IssueState = Literal["open", "closed"]
_STATES = ("open", "closed")

_DEDICATED_RE = re.compile(
    r"[ \t]{0,3}(?:#{1,6}[ \t]+)?(?:\*\*|__)?dedicated issues:?(?:\*\*|__)?:?[ \t]*#*[ \t]*",
    re.IGNORECASE,
)
# "•" is what the seed body uses; "-", "*", "+" and "1." / "1)" are markdown's own bullets.
_BULLET_RE = re.compile(r"[ \t]*(?:•[ \t]*|[-*+][ \t]+|\d{1,9}[.)][ \t]+)\S")
_VERSION_RE = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+!-]{0,39}")
_CONTINUATION_RE = re.compile(r"(?: {2,}|\t)\S")


@dataclass(frozen=True)
class ChecklistEntry:
    """One audit item as a line of the checklist: ``state`` and ``state_reason`` are GitHub's
    (None while ``issue`` is), ``note`` an optional short status, ``fixed_in`` the release from
    which every claim is fixed, ``partly_fixed_in`` the one that fixed some. The line is ticked
    when, and only when, the item has an issue and it is closed."""

    item: int
    title: str
    issue: int | None
    state: IssueState | None
    state_reason: str | None
    note: str | None = None
    fixed_in: str | None = None
    partly_fixed_in: str | None = None
    filed: bool = False  # the issue is one artbot filed (found by marker), not a preset one
    # The newest release checked, while the item is still present there (no claim fixed).
    present_in: str | None = None
    # For artbot's own follow-up (not an audit item): the audit item it follows. Listed apart.
    follows: int | None = None
    # While partly fixed: what remains, when it is one claim (its symptom, e.g. item 9's
    # question), so the line says what is still open rather than the fixed part.
    remaining: str | None = None

    def __post_init__(self) -> None:
        # A newline in a title or note would end the task-list line and break the list.
        if self.item < 1:
            raise ValueError(f"item must be >= 1, got {self.item}")
        if not self.title.strip() or _has_newline(self.title):
            raise ValueError(f"item {self.item}: title must be one non-empty line")
        if self.remaining is not None and (
            not self.remaining.strip() or _has_newline(self.remaining)
        ):
            raise ValueError(f"item {self.item}: remaining must be one non-empty line")
        if self.note is not None and (not self.note.strip() or _has_newline(self.note)):
            raise ValueError(f"item {self.item}: note must be one non-empty line")
        for version in (self.fixed_in, self.partly_fixed_in, self.present_in):
            if version is not None and not _VERSION_RE.fullmatch(version):
                raise ValueError(f"item {self.item}: {version!r} is not a version number")
        if self.issue is not None and self.issue < 1:
            raise ValueError(f"item {self.item}: issue must be >= 1, got {self.issue}")
        if self.state not in (*_STATES, None):
            raise ValueError(f"item {self.item}: state must be open, closed or None")
        if self.issue is None and (self.state, self.state_reason) != (None, None):
            raise ValueError(f"item {self.item}: state given without an issue")


def _has_newline(text: str) -> bool:
    return "\n" in text or "\r" in text


def read_block(body: str | None) -> str | None:
    """The content between the markers with LF line endings, or None when there is no block:
    ``read_block(body) == rendered`` means no edit is needed. Raises :class:`ChecklistError`
    on broken markers."""
    body = body or ""
    span = _find_block(body)
    if span is None:
        return None
    start, end = span
    inner = body[start + len(START_MARKER) : end - len(END_MARKER)]
    if inner.startswith("\r\n"):
        inner = inner[2:]
    elif inner.startswith("\n"):
        inner = inner[1:]
    return inner.replace("\r\n", "\n")


def apply_block(body: str | None, block: str) -> str:
    """``body`` with its checklist block's content set to ``block`` (the content between the
    markers; a missing final newline is added), by the module's rules. Raises
    :class:`ChecklistError` on broken markers in ``body`` or any marker inside ``block``."""
    if START_MARKER in block or END_MARKER in block:
        raise ChecklistError("checklist block must not contain the checklist markers")
    content = block.replace("\r\n", "\n").replace("\r", "\n")
    if content and not content.endswith("\n"):
        content += "\n"
    body = body or ""
    span = _find_block(body)
    if span is not None:
        start, end = span
        # Keep the block's own line ending, so a second apply is a no-op.
        after_start = body[start + len(START_MARKER) :]
        if after_start.startswith("\r\n"):
            nl = "\r\n"
        elif after_start.startswith("\n"):
            nl = "\n"
        else:
            nl = _newline_of(body)
        return body[:start] + _region(content, nl) + body[end:]
    nl = _newline_of(body)
    at = _after_dedicated_list(body)
    if at is None or at >= len(body):
        return body + _end_separator(body, nl) + _region(content, nl) + nl
    following_blank = _line_at(body, at).strip() == ""
    return body[:at] + nl + _region(content, nl) + nl + ("" if following_blank else nl) + body[at:]


def _region(content: str, nl: str) -> str:
    return START_MARKER + nl + content.replace("\n", nl) + END_MARKER


def _newline_of(body: str) -> str:
    """CRLF when the body's first line ends in CRLF, else LF."""
    first = body.find("\n")
    return "\r\n" if first > 0 and body[first - 1] == "\r" else "\n"


def _line_number(body: str, index: int) -> int:
    return body.count("\n", 0, index) + 1


def _find_block(body: str) -> tuple[int, int] | None:
    """``(start, end)`` of the one block, markers included, or None; raises if broken."""
    starts = _all(body, START_MARKER)
    ends = _all(body, END_MARKER)
    if not starts and not ends:
        return None
    where = "tracking issue body"
    if len(starts) > 1 or len(ends) > 1:
        lines = ", ".join(str(_line_number(body, i)) for i in sorted(starts + ends))
        raise ChecklistError(
            f"{where}: more than one checklist block (markers on lines {lines}); "
            "delete all but one block by hand"
        )
    if not ends:
        raise ChecklistError(
            f"{where}: line {_line_number(body, starts[0])}: checklist start marker has no "
            f"{END_MARKER}; add it or delete the start marker"
        )
    if not starts:
        raise ChecklistError(
            f"{where}: line {_line_number(body, ends[0])}: checklist end marker has no "
            f"{START_MARKER}; add it or delete the end marker"
        )
    if ends[0] < starts[0]:
        raise ChecklistError(
            f"{where}: line {_line_number(body, ends[0])}: checklist end marker comes before "
            "the start marker"
        )
    return starts[0], ends[0] + len(END_MARKER)


def _all(text: str, needle: str) -> list[int]:
    found, i = [], text.find(needle)
    while i >= 0:
        found.append(i)
        i = text.find(needle, i + len(needle))
    return found


def _lines(body: str) -> list[tuple[int, str]]:
    """``(offset, line)`` for each line, split on LF only; the line keeps any trailing CR."""
    out, offset = [], 0
    for piece in body.split("\n"):
        out.append((offset, piece))
        offset += len(piece) + 1
    if body.endswith("\n"):
        out.pop()  # split() leaves an empty string after a final newline; it is not a line.
    return out


def _line_at(body: str, index: int) -> str:
    end = body.find("\n", index)
    return body[index : len(body) if end < 0 else end]


def _after_dedicated_list(body: str) -> int | None:
    """Offset just after the last line of the first "Dedicated issues" list, or None."""
    lines = _lines(body)
    for i, (_, line) in enumerate(lines):
        if not _DEDICATED_RE.fullmatch(line.rstrip("\r")):
            continue
        last = None  # index of the last line that belongs to the list
        for j in range(i + 1, len(lines)):
            text = lines[j][1].rstrip("\r")
            if not text.strip():
                continue  # blank lines may sit before, between or after bullets
            if _BULLET_RE.match(text) or (last is not None and _CONTINUATION_RE.match(text)):
                last = j
            else:
                break
        if last is not None:
            offset, line = lines[last]
            # len(body) when the list ends the body; apply_block then appends there.
            return min(offset + len(line) + 1, len(body))
    return None


def _end_separator(body: str, nl: str) -> str:
    """What goes between ``body`` and a block appended to it: enough for one blank line."""
    if not body:
        return ""
    if not body.endswith("\n"):
        return nl + nl
    last_line = _lines(body)[-1][1]
    return "" if not last_line.strip() else nl
