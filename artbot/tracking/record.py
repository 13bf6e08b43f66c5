"""artbot's memory in the tracking issue: one hidden, versioned, validated record.

The block shows the checklist and the tick boxes (the requests, and each honoured decline as a
ticked "Declined" line); everything else artbot remembers sits in one hidden last line,

    <!-- artbot:record {"v":1,"logins":[...],"sub_issues":{...},"note":{...}} -->

read by :func:`read_record` and written by :meth:`Memory.line`:

* ``logins``: the logins artbot has been configured to write as on this tracking issue, oldest
  first (at most :data:`MAX_LOGINS`): an issue one of them wrote stays artbot's when the
  configured login changes (an App, then the workflow's token);
* ``sub_issues``: the :class:`~artbot.tracking.subissues.SubIssueRecord`;
* ``note``: why ticks were cleared instead of carried out (:class:`~.requests.Note`), shown as
  a visible line below the Requests list.

Every string of a body is hostile: the record is validated by pydantic (``extra="forbid"``,
logins and parent references in GitHub's syntax, positive issue numbers, a known version); a
record that does not validate is no record (the next write replaces it), as is a block without
one. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from ..records.models import LOGIN
from .requests import REASONS, Note, Request
from .subissues import SubIssueRecord

MAX_LOGINS = 5
_RECORD_RE = re.compile(r"<!-- artbot:record (\{.*\}) -->")

Login = Annotated[str, StringConstraints(pattern=rf"^{LOGIN}$")]
# An issue number (up to 2**41: a plan names an issue it files by a reference above 2**40).
Number = Annotated[int, Field(ge=1, le=2**41)]
Parent = Annotated[
    str, StringConstraints(pattern=r"^(?:[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)?#[1-9][0-9]{0,9}$")
]
Key = Annotated[str, StringConstraints(pattern=r"^(?:(?:file|decline)=[1-9][0-9]{0,5}|recheck)$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _SubIssues(_Strict):
    added: tuple[Number, ...] = ()
    removed: tuple[Number, ...] = ()
    elsewhere: tuple[tuple[Number, Parent], ...] = ()
    others: Annotated[int, Field(ge=0, le=10**6)] = 0


class _Note(_Strict):
    sender: Login | None = None
    requests: tuple[Key, ...] = Field(min_length=1)
    why: Literal[REASONS] = "no-write"  # type: ignore[valid-type]


class _Record(_Strict):
    v: Literal[1]
    logins: tuple[Login, ...] = Field(default=(), max_length=MAX_LOGINS)
    sub_issues: _SubIssues | None = None
    note: _Note | None = None


@dataclass(frozen=True)
class Memory:
    """What the record holds, as the run uses it."""

    logins: tuple[str, ...] = ()
    sub_issues: SubIssueRecord | None = None
    note: Note | None = None

    def line(self) -> str:
        """The hidden line (empty when there is nothing to remember)."""
        logins = tuple(dict.fromkeys(x for x in self.logins if re.fullmatch(LOGIN, x)))
        record = _Record(
            v=1,
            logins=logins[:MAX_LOGINS],
            sub_issues=_SubIssues(**vars(self.sub_issues)) if self.sub_issues else None,
            note=_Note(
                sender=self.note.sender,
                requests=tuple(r.key for r in self.note.requests),
                why=self.note.why,
            )
            if self.note
            else None,
        )
        if record == _Record(v=1):
            return ""
        data = record.model_dump(mode="json", exclude_defaults=True)
        text = json.dumps({"v": 1, **data}, separators=(",", ":"), sort_keys=True)
        return f"<!-- artbot:record {text} -->"


def read_record(block: str | None) -> Memory:
    """The one parser of artbot's memory in a block (its content, as read from the body)."""
    found = _RECORD_RE.findall(block or "")
    if not found:
        return Memory()
    try:
        record = _Record.model_validate_json(found[-1])
    except ValidationError:
        return Memory()
    subs = record.sub_issues
    note = record.note
    return Memory(
        logins=record.logins,
        sub_issues=SubIssueRecord(subs.added, subs.removed, subs.elsewhere, subs.others)
        if subs
        else None,
        note=Note(note.sender, tuple(sorted(Request.from_key(k) for k in note.requests)), note.why)
        if note
        else None,
    )
