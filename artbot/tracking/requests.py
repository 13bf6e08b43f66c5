"""The tracking issue as a control panel: the "Requests" list in artbot's checklist block.

Pure: block text in, requests out. artbot writes one unticked task-list line per thing a
maintainer may ask for, each ending in a hidden marker that names the request:

    - [ ] File the issue for item 5 <!-- artbot:request file=5 -->
    - [ ] Re-check against the newest release <!-- artbot:request recheck -->

The rules (which ticks count, who may tick, a decline as a standing answer, the note on a
cleared tick) are the README's "Requests by checkbox", decided here by :func:`sort_ticks` and
:meth:`Asked.panel_for`. The marker, not the words, names the request: editing the words
changes nothing, and a line without a marker is not a request. Every string from the body is
treated as hostile: only markers of the exact form above are read, item numbers are bounded,
and a login is accepted only in GitHub's own login syntax.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ChecklistError
from ..records.models import LOGIN
from .checklist import read_block

RequestKind = Literal["file", "recheck", "decline"]
# Why a tick is cleared instead of carried out (each has its note, :func:`revert_note`).
Reason = Literal["no-write", "unchecked", "unattributed"]
REASONS: tuple[Reason, ...] = ("no-write", "unchecked", "unattributed")

MARKER_RE = re.compile(r"<!-- artbot:request ((?:file|decline)=([1-9][0-9]{0,5})|recheck) -->")
DECLINED_RE = re.compile(r"<!-- artbot:declined ([1-9][0-9]{0,5}) -->")
# The one tick grammar: a task-list line as GitHub renders one, up to its box's "[": any indent,
# in blockquotes, -, *, + or 1. 1); "[x]" or "[X]" is ticked. The requests are read with it here,
# and the ticks are kept with it when the block is written again (artbot.run.blockwrite).
TASK = r"(?:[ \t]*>)*[ \t]*(?:[-*+]|[0-9]{1,9}[.)])[ \t]+\["
_TICKED = TASK + r"[xX]\](?:[ \t]+[^\n]*?)?[ \t]*"
_TICKED_RE = re.compile(_TICKED + f"({MARKER_RE.pattern})" + r"[ \t]*")
# An honoured decline, as artbot renders it (ticked, in any form GitHub renders as ticked).
_HONOURED_RE = re.compile(_TICKED + DECLINED_RE.pattern + r"[ \t]*")
_LOGIN_RE = re.compile(LOGIN)
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
    """A request as the block shows it; ``hint`` says how a filing request will be filed.
    ``standing``: an honoured decline, shown ticked with its own marker."""

    request: Request
    ticked: bool = False
    hint: str | None = None
    standing: bool = False

    @property
    def text(self) -> str:
        if self.standing:
            return (
                f"Declined: artbot's follow-up {self.request.item} is never filed "
                "(untick to take the answer back)"
            )
        return self.request.text

    @property
    def marker(self) -> str:
        if self.standing:
            return f"<!-- artbot:declined {self.request.item} -->"
        return self.request.marker


@dataclass(frozen=True)
class Panel:
    """The Requests list to render: its lines and the note on a reverted tick, if any."""

    lines: tuple[RequestLine, ...] = ()
    note: Note | None = None


def offered(entries: Iterable[Any], declined: Iterable[int] = ()) -> tuple[Request, ...]:
    """What may be asked for: filing each item without an issue (but a declined follow-up),
    a re-check, and declining each follow-up without an issue not declined already."""
    entries, no = list(entries), set(declined)
    files = [Request("file", e.item) for e in entries if e.issue is None and e.item not in no]
    declines = [Request("decline", e.item) for e in _open_follow_ups(entries) if e.item not in no]
    return (*files, Request("recheck"), *declines)


def _open_follow_ups(entries: Iterable[Any]) -> list[Any]:
    return [e for e in entries if e.issue is None and getattr(e, "follows", None) is not None]


def declined(block: str | None) -> frozenset[int]:
    """The follow-ups whose decline artbot honoured: their "Declined" line is ticked in
    ``block`` (the record that the answer was honoured; the request's own tick is not)."""
    return frozenset(int(m[1]) for m in _lines_matching(_HONOURED_RE, block))


def ticked(block: str | None) -> frozenset[Request]:
    """The requests ticked in ``block`` (the checklist block's content)."""
    return frozenset(Request.from_key(m[2]) for m in _lines_matching(_TICKED_RE, block))


def _lines_matching(pattern: re.Pattern[str], block: str | None) -> list[re.Match[str]]:
    lines = (block or "").replace("\r\n", "\n").split("\n")
    return [m for line in lines if (m := pattern.fullmatch(line))]


@dataclass(frozen=True)
class Note:
    """Why ticks were cleared instead of carried out: whose (None: no writer's edit made
    them), which requests, and why. Kept in the block's record
    (:mod:`artbot.tracking.record`) until a request is next carried out, shown as one line."""

    sender: str | None
    requests: tuple[Request, ...]
    why: Reason = "no-write"

    @property
    def text(self) -> str:
        return revert_note(self.sender, self.requests, self.why)


def revert_note(login: str | None, requests: Sequence[Request], why: Reason = "no-write") -> str:
    """The note on ticks cleared instead of carried out, and why."""
    names = " and ".join(f'"{r.text}"' for r in sorted(requests))
    if why == "unattributed" or login is None:
        return (
            f"_Requests: a tick on {names} was cleared: artbot carries out a request only from "
            "the edit that ticked it, made by someone with write access; tick it again to ask._"
        )
    if why == "unchecked":
        return (
            f"_Requests: a tick by @{login} on {names} was reverted: GitHub did not say whether "
            f"@{login} has write access; tick it again to ask._"
        )
    return (
        f"_Requests: a tick by @{login} on {names} was reverted: on an edit, artbot carries out "
        "requests only from people with write access to this repository._"
    )


def panel(
    entries: Iterable[Any],
    keep_ticked: Iterable[Request],
    note: Note | None,
    declined: Iterable[int] = (),
) -> Panel:
    """The Requests list given the items' issues; ``keep_ticked`` stay ticked (pending), and
    the follow-ups in ``declined`` (without an issue) show their honoured decline."""
    keep = set(keep_ticked)
    entries = list(entries)
    by_item = {e.item: e for e in entries}
    no = {e.item for e in _open_follow_ups(entries)} & set(declined)
    lines = [
        RequestLine(r, r in keep, _hint(by_item.get(r.item)) if r.kind == "file" else None)
        for r in offered(entries, no)
    ]
    lines += [RequestLine(Request("decline", n), True, standing=True) for n in sorted(no)]
    return Panel(tuple(lines), note)


def _hint(entry: Any) -> str | None:
    """How ``open`` will file the item, from its recorded status (artbot.render.status_view)."""
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
    """The parts of an ``issues: edited`` event that artbot reads: whose edit, of which issue,
    and which requests it ticked (its ``changes.body.from`` against the issue's new body)."""

    issue: int
    sender: str
    added: frozenset[Request] = frozenset()

    @classmethod
    def from_payload(cls, data: Mapping[str, Any]) -> EditEvent:
        """Read a webhook payload; raises ValueError on anything malformed. An edit that did
        not change the body (no ``changes.body``) ticked nothing."""
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
        changes = data.get("changes")
        body = changes.get("body") if isinstance(changes, Mapping) else None
        before = body.get("from") if isinstance(body, Mapping) else None
        after = issue.get("body") if isinstance(issue, Mapping) else None
        if not isinstance(before, str):
            return cls(number, login)
        return cls(number, login, ticks_in(after) - ticks_in(before))

    @classmethod
    def of_edit(cls, issue: int, sender: str, before: str | None, after: str | None) -> EditEvent:
        """The event GitHub sends when ``sender`` edits #issue's body from ``before`` to
        ``after`` (the demo's and the tests' stand-in for a real one)."""
        return cls(issue, sender, ticks_in(after) - ticks_in(before))


def ticks_in(body: str | None) -> frozenset[Request]:
    """The requests ticked in a body's block (none when its markers are broken), an honoured
    decline's line counted as its decline's tick (so an edit that writes one is seen)."""
    try:
        block = read_block(body if isinstance(body, str) else None)
    except ChecklistError:
        return frozenset()
    return ticked(block) | {Request("decline", n) for n in declined(block)}


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
    why: str = "no-write"

    def describe(self) -> str:
        if self.why == "unattributed" or not self.sender:
            return (
                f"tracking issue #{self.issue}: clear the tick on {self.text!r} (no edit by "
                "someone with write access made it)"
            )
        because = "write access not known" if self.why == "unchecked" else "no write access"
        text = f"tracking issue #{self.issue}: revert @{self.sender}'s tick on {self.text!r}"
        return f"{text} ({because})"


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
    why: Reason = "no-write"  # why the ``revert`` ticks are cleared
    standing: tuple[int, ...] = ()  # honoured declines that stay (a standing answer)

    def actions(self) -> list[PanelAction]:
        out: list[PanelAction] = [CarryOutRequest(self.tracking, r.key, r.text) for r in self.carry]
        sender = "" if self.why == "unattributed" else self.sender or ""
        out += [RevertTick(self.tracking, r.key, r.text, sender, self.why) for r in self.revert]
        out += [DropRequest(self.tracking, r.key, r.text) for r in self.drop]
        return out

    def files(self) -> list[int]:
        return [r.item for r in self.carry if r.kind == "file" and r.item is not None]

    def declines(self) -> list[int]:
        return [r.item for r in self.carry if r.kind == "decline" and r.item is not None]

    @property
    def recheck(self) -> bool:
        return Request("recheck") in self.carry

    def panel_for(
        self,
        entries: Iterable[Any],
        ticks: Iterable[Request],
        note: Note | None,
        *,
        done: Iterable[Request],
        declined: Iterable[int] = (),
    ) -> Panel:
        """The Requests list to write over a block that holds ``ticks``, ``note`` and the
        honoured ``declined`` now, once ``done`` were carried out: those, the reverted and the
        dropped are cleared; any other tick stays (still pending). A decline carried out is
        honoured from now on; an honoured one stays, unless this run reverts it."""
        done = set(done)
        keep = set(ticks) - done - set(self.revert) - set(self.drop)
        reverted = {r.item for r in self.revert if r.kind == "decline"}
        honoured = (set(declined) | set(self.declines())) - reverted
        keep -= {Request("decline", n) for n in honoured}
        if self.revert:
            who = None if self.why == "unattributed" else self.sender
            note = Note(who, self.revert, self.why)
        elif done & set(self.carry):
            note = None
        return panel(entries, keep, note, honoured)


def sort_ticks(
    tracking: int,
    ticks: Iterable[Request],
    entries: Iterable[Any],
    *,
    sender: str | None = None,
    added: Iterable[Request] = (),
    may_write: bool = True,
    why: Reason = "no-write",
    declined: Iterable[int] = (),
) -> Asked:
    """Sort ``ticks`` (:func:`ticked` of the block) by the README's rules ("Requests by checkbox").
    ``sender`` is the edit's (None: no edit, a scheduled run), ``added`` the requests that
    edit ticked, ``may_write`` whether the sender has write access (``why`` not: the reason),
    ``declined`` the follow-ups whose decline the block records as honoured."""
    entries = list(entries)
    # An honoured decline's line this very edit wrote counts as that edit's tick, not as a
    # record artbot wrote: it stands only if the edit's sender may write.
    fresh = {r.item for r in added if r.kind == "decline"} & set(declined)
    now = frozenset(ticks) | {Request("decline", n) for n in fresh}
    honoured = (set(declined) - fresh) & {e.item for e in _open_follow_ups(entries)}
    applicable = set(offered(entries, honoured))
    live = now & applicable
    if sender is None or may_write:
        carry = live & set(added) if sender is not None else set()
        revert, why = live - carry, "unattributed"
        standing = honoured  # a standing answer: no later run clears it
    else:
        # An edit by someone without write access: every live tick is reverted, and the
        # honoured declines too (that edit could have written their record itself).
        carry, revert = set(), live | {Request("decline", n) for n in honoured}
        standing = set()
    # Filing a follow-up and declining it in the same edit: the decline wins.
    no = {r.item for r in carry if r.kind == "decline"}
    lost = {r for r in carry if r.kind == "file" and r.item in no}
    return Asked(
        tracking,
        tuple(sorted(carry - lost)),
        tuple(sorted(revert)),
        tuple(sorted((now - applicable) | lost)),
        sender,
        why,
        tuple(sorted(standing)),
    )
