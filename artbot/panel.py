"""The tracking issue as a control panel: the "Requests" list in artbot's checklist block.

Pure: block text in, requests out. artbot writes one unticked task-list line per thing a
maintainer may ask for, each ending in a hidden marker that names the request:

    - [ ] File the issue for item 5 <!-- artbot:request file=5 -->
    - [ ] Re-check against the newest release <!-- artbot:request recheck -->

Rules, so a reviewer can predict every edit:

* A request is ticked when its line inside the block is a ticked task (``- [x]`` or ``- [X]``)
  that ends in its marker. The marker, not the words, names the request: editing the words
  changes nothing, and a line without a marker is not a request.
* "File the issue for item N" is offered for every item without an issue; "Re-check against
  the newest release" always; "Decline follow-up N" for each of artbot's own follow-ups
  without an issue. A decline is a standing answer, not a one-off request: its tick is never
  carried out or cleared, and while it stands the follow-up is not offered for filing and
  ``open`` never files it (untick it to take the answer back). A ticked request that no
  longer applies (item N has an issue now) is dropped from the list, not carried out.
* A ticked request is carried out once, then rendered unticked (or dropped); until then it
  stays ticked, so a run that cannot carry it out (no verification available) writes nothing.
* On the ``issues: edited`` path the ticks count only when the event's sender has write
  access; otherwise every tick is reverted (rendered unticked) and noted in the block, one
  note, the newest, kept until a request is next carried out. Every tick, not only the ones
  this edit added: GitHub keeps one queued run per concurrency group and drops the older, so
  a tick from an edit whose run was dropped arrives with the next edit, and would otherwise
  pass as someone else's earlier tick.
* Every string from the body is treated as hostile: only markers of the exact form above are
  read, item numbers are bounded, and a login is accepted only in GitHub's own login syntax.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

RequestKind = Literal["file", "recheck", "decline"]

_MARKER_RE = re.compile(r"<!-- artbot:request ((?:file|decline)=([1-9][0-9]{0,5})|recheck) -->")
_TICKED_RE = re.compile(
    r"[ \t]{0,3}[-*+][ \t]+\[[xX]\][ \t]+[^\n]*?(<!-- artbot:request "
    r"(?:(?:file|decline)=[1-9][0-9]{0,5}|recheck) -->)[ \t]*"
)
_LOGIN_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")
NOTE_PREFIX = "_Requests: a tick by @"
WRITE_PERMISSIONS = ("admin", "write")  # GitHub's `permission`; maintain reads as write


@dataclass(frozen=True, order=True)
class Request:
    """One thing a maintainer may ask for by ticking a box."""

    kind: RequestKind
    item: int | None = None

    @property
    def key(self) -> str:
        return "recheck" if self.kind == "recheck" else f"{self.kind}={self.item}"

    @property
    def text(self) -> str:
        if self.kind == "file":
            return f"File the issue for item {self.item}"
        if self.kind == "decline":
            return f"Decline artbot's follow-up {self.item} (never file it)"
        return "Re-check against the newest release"

    @property
    def marker(self) -> str:
        return f"<!-- artbot:request {self.key} -->"

    @classmethod
    def from_key(cls, key: str) -> Request:
        if key == "recheck":
            return cls("recheck")
        kind, _, item = key.partition("=")
        return cls("decline" if kind == "decline" else "file", int(item))


@dataclass(frozen=True)
class RequestLine:
    """A request as the block shows it; ``hint`` says how a filing request will be filed."""

    request: Request
    ticked: bool = False
    hint: str | None = None

    @property
    def text(self) -> str:
        return self.request.text

    @property
    def marker(self) -> str:
        return self.request.marker


@dataclass(frozen=True)
class Panel:
    """The Requests list to render: its lines and the note on a reverted tick, if any."""

    lines: tuple[RequestLine, ...] = ()
    note: str | None = None


def offered(entries: Iterable[Any], declined: Iterable[int] = ()) -> tuple[Request, ...]:
    """What may be asked for: filing each item without an issue (but a declined follow-up),
    a re-check, and declining each follow-up without an issue."""
    entries, no = list(entries), set(declined)
    files = [Request("file", e.item) for e in entries if e.issue is None and e.item not in no]
    declines = [
        Request("decline", e.item)
        for e in entries
        if e.issue is None and getattr(e, "follows", None) is not None
    ]
    return (*files, Request("recheck"), *declines)


def declined(block: str | None) -> frozenset[int]:
    """The follow-ups a maintainer declined: their decline box is ticked in ``block``."""
    return frozenset(r.item for r in ticked(block) if r.kind == "decline" and r.item)


def ticked(block: str | None) -> frozenset[Request]:
    """The requests ticked in ``block`` (the checklist block's content)."""
    found = set()
    for line in (block or "").replace("\r\n", "\n").split("\n"):
        m = _TICKED_RE.fullmatch(line)
        if m:
            key = _MARKER_RE.fullmatch(m[1])
            assert key is not None
            found.add(Request.from_key(key[1]))
    return frozenset(found)


_NOTE_RE = re.compile(r"_Requests: a tick by @(\S+) on (.+?) was reverted: .*_")
_TEXT_RE = re.compile(
    r"File the issue for item ([1-9][0-9]{0,5})|Re-check against the newest release"
)


def note_in(block: str | None) -> str | None:
    """The reverted-tick note the block carries now, only as artbot writes it: a line of
    another shape (someone's edit inside the block) is not kept."""
    for line in (block or "").replace("\r\n", "\n").split("\n"):
        m = _NOTE_RE.fullmatch(line)
        login = valid_login(m[1]) if m else None
        if m is None or login is None:
            continue
        requests = []
        for name in re.findall(r'"([^"]*)"', m[2]):
            text = _TEXT_RE.fullmatch(name)
            if text is None:
                break
            requests.append(Request("file", int(text[1])) if text[1] else Request("recheck"))
        else:
            if requests and line == revert_note(login, requests):
                return line
    return None


def revert_note(login: str, requests: Sequence[Request]) -> str:
    """The note on ticks reverted because ``login`` has no write access."""
    names = " and ".join(f'"{r.text}"' for r in sorted(requests))
    return (
        f"{NOTE_PREFIX}{login} on {names} was reverted: on an edit, artbot carries out "
        "requests only from people with write access to this repository._"
    )


def panel(entries: Iterable[Any], keep_ticked: Iterable[Request], note: str | None) -> Panel:
    """The Requests list given the items' issues; ``keep_ticked`` stay ticked (pending)."""
    keep = set(keep_ticked)
    entries = list(entries)
    by_item = {e.item: e for e in entries}
    no = {r.item for r in keep if r.kind == "decline" and r.item is not None}
    return Panel(
        tuple(
            RequestLine(r, r in keep, _hint(by_item.get(r.item)) if r.kind == "file" else None)
            for r in offered(entries, no)
        ),
        note,
    )


def _hint(entry: Any) -> str | None:
    """How ``open`` will file the item, from its recorded status (artbot.status.view)."""
    if entry is None:
        return None
    if entry.fixed_in:
        return f"filed closed: fixed in {entry.fixed_in}"
    if entry.partly_fixed_in:
        return f"filed open about what remains: partly fixed in {entry.partly_fixed_in}"
    return None


def valid_login(login: Any) -> str | None:
    """``login`` when it is a GitHub login, else None (it came from an event payload)."""
    return login if isinstance(login, str) and _LOGIN_RE.fullmatch(login) else None


@dataclass(frozen=True)
class EditEvent:
    """The parts of an ``issues: edited`` event that artbot reads: whose edit, of which issue."""

    issue: int
    sender: str

    @classmethod
    def from_payload(cls, data: Mapping[str, Any]) -> EditEvent:
        """Read a webhook payload; raises ValueError on anything malformed."""
        if not isinstance(data, Mapping):
            raise ValueError("the event is not a JSON object")
        issue = data.get("issue")
        number = issue.get("number") if isinstance(issue, Mapping) else None
        sender = data.get("sender")
        login = valid_login(sender.get("login") if isinstance(sender, Mapping) else None)
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise ValueError("the event names no issue number")
        if login is None:
            raise ValueError("the event names no sender login")
        return cls(number, login)


# --- what a run plans to do about the requests (plan actions, pure values) -----------------


@dataclass(frozen=True)
class CarryOutRequest:
    issue: int  # the tracking issue
    request: str  # the request's key: file=5, recheck
    text: str

    def describe(self) -> str:
        return f"tracking issue #{self.issue}: carry out the ticked request {self.text!r}"


@dataclass(frozen=True)
class RevertTick:
    issue: int
    request: str
    text: str
    sender: str

    def describe(self) -> str:
        return (
            f"tracking issue #{self.issue}: revert @{self.sender}'s tick on {self.text!r} "
            "(no write access)"
        )


@dataclass(frozen=True)
class DropRequest:
    issue: int
    request: str
    text: str

    def describe(self) -> str:
        text = f"tracking issue #{self.issue}: drop the ticked request {self.text!r}"
        return f"{text} (no longer applies)"


PanelAction = CarryOutRequest | RevertTick | DropRequest


@dataclass(frozen=True)
class Asked:
    """The ticked requests, sorted: to carry out, to revert (the sender may not), to drop."""

    tracking: int
    carry: tuple[Request, ...] = ()
    revert: tuple[Request, ...] = ()
    drop: tuple[Request, ...] = ()
    sender: str | None = None

    def actions(self) -> list[PanelAction]:
        out: list[PanelAction] = [CarryOutRequest(self.tracking, r.key, r.text) for r in self.carry]
        out += [RevertTick(self.tracking, r.key, r.text, self.sender or "") for r in self.revert]
        out += [DropRequest(self.tracking, r.key, r.text) for r in self.drop]
        return out

    def files(self) -> list[int]:
        return [r.item for r in self.carry if r.kind == "file" and r.item is not None]

    @property
    def recheck(self) -> bool:
        return Request("recheck") in self.carry

    def panel_for(
        self, entries: Iterable[Any], block: str | None, *, done: Iterable[Request]
    ) -> Panel:
        """The Requests list to write over ``block`` once ``done`` were carried out: those,
        the reverted and the dropped are cleared; any other tick stays (still pending)."""
        done = set(done)
        keep = ticked(block) - done - set(self.revert) - set(self.drop)
        if self.revert:
            note = revert_note(self.sender or "", self.revert)
        elif done & set(self.carry):
            note = None
        else:
            note = note_in(block)
        return panel(entries, keep, note)


def sort_ticks(
    tracking: int,
    block: str | None,
    entries: Iterable[Any],
    *,
    sender: str | None = None,
    may_write: bool = True,
) -> Asked:
    """Sort the ticks in ``block``. On the edit path, ``may_write`` is whether the edit's
    ``sender`` has write access; without it every tick is reverted."""
    now = ticked(block)
    entries = list(entries)
    applicable = set(offered(entries, declined(block)))
    live = now & applicable
    revert = set() if may_write else live
    # A decline is a standing answer: never carried out (and so never cleared).
    standing = {r for r in live if r.kind == "decline"}
    return Asked(
        tracking,
        tuple(sorted(live - revert - standing)),
        tuple(sorted(revert)),
        tuple(sorted(now - applicable)),
        sender,
    )
