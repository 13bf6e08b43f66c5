"""Read and carry out the Requests ticked in the tracking issue (decisions: :mod:`artbot.tracking.requests`).

Each request is carried out by a path that is already safe to re-run, so "once" survives a
crash: filing goes through ``open`` (which finds an item's issue by marker before creating
one, and whose request then no longer applies), and a re-check is a verification whose
comments are posted once per status change. A ticked box is cleared by the checklist write
that follows what it asked for, never before: a crash in between leaves it ticked, and the
next run does it (a no-op where it was done) and clears it.

On the ``issues: edited`` path the edit's sender is checked before anything is written: the
ticks count only when ``GET /repos/{owner}/{repo}/collaborators/{login}/permission`` says
``admin`` or ``write``; otherwise every tick is reverted and noted in the block (why every
tick: :mod:`artbot.tracking.requests`). The permission is asked only when a box is ticked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ArtbotError
from ..github.repo import Repo
from ..models import ObservedIssue
from ..tracking.checklist import ChecklistEntry, read_block
from ..tracking.requests import WRITE_PERMISSIONS, Asked, EditEvent, Panel, Request, sort_ticks

Warn = Callable[[str], None]
# (version, results of verify_code), run only when a re-check is asked for and none was given.
Verifier = Callable[[], tuple[str, Sequence[Any]]]
PanelEdit = Callable[[str | None, Sequence[ChecklistEntry]], Panel]


def read_requests(
    repo: Repo,
    tracking: int,
    block: str | None,
    entries: Sequence[ChecklistEntry],
    event: EditEvent | None,
    warn: Warn,
) -> Asked:
    """The ticked requests in ``block``, sorted; on the edit path, the sender checked."""
    if event is None:
        return sort_ticks(tracking, block, entries)
    if event.issue != tracking:
        warn(f"requests: the edit was to #{event.issue}, not the tracking issue #{tracking}")
        return Asked(tracking)
    asked = sort_ticks(tracking, block, entries, sender=event.sender)
    if not asked.carry:
        return asked  # nothing ticked that applies: no need to ask who edited
    allowed = repo.permission(event.sender) in WRITE_PERMISSIONS
    return sort_ticks(tracking, block, entries, sender=event.sender, may_write=allowed)


def run_verifier(
    asked: Asked,
    verified: tuple[str, Sequence[Any]] | None,
    verifier: Verifier | None,
    warn: Warn,
) -> tuple[tuple[str, Sequence[Any]] | None, bool]:
    """(the verification this run uses, whether the re-check request is carried out)."""
    if not asked.recheck:
        return verified, False
    if verified is not None:
        return verified, True  # this run checks the newest release anyway
    if verifier is None:
        warn("requests: a re-check was asked for; this run does not verify (it stays ticked)")
        return None, False
    try:
        return verifier(), True
    except ArtbotError as exc:
        warn(f"requests: the re-check did not run ({exc}); it stays ticked")
        return None, False
    except ImportError as exc:  # the reproductions' extra (torch) is not installed
        warn(f"requests: the re-check needs artbot[repro] ({exc.name}); it stays ticked")
        return None, False


def panel_edit(asked: Asked, done: Sequence[Request]) -> PanelEdit:
    """How a checklist write renders the Requests list over the block it re-read."""
    return lambda block, entries: asked.panel_for(entries, block, done=done)


def done_lines(
    asked: Asked, filed: dict[int, Any], rechecked: str | None, tracking: int
) -> list[str]:
    """What was done about each request, for the log, ``--json`` and the step summary."""
    out = []
    for r in asked.carry:
        if r.kind == "file" and r.item in filed:
            issue = filed[r.item]
            out.append(f"request in #{tracking}: filed item {r.item} as #{issue.number}")
        elif r.kind == "recheck" and rechecked:
            out.append(f"request in #{tracking}: re-checked against openpipe-art {rechecked}")
    out += [
        f"request in #{tracking}: reverted @{asked.sender}'s tick on {r.text!r} "
        "(write access is needed to ask artbot from an edit)"
        for r in asked.revert
    ]
    out += [f"request in #{tracking}: {r.text!r} no longer applies; cleared" for r in asked.drop]
    return out


@dataclass
class RequestStep:
    """The requests part of a sync, done before its own plan: what it asks of the rest."""

    asked: Asked | None = None
    verified: tuple[str, Sequence[Any]] | None = None
    edit: PanelEdit | None = None  # how the sync's checklist write renders the Requests
    opened: Any = None  # open's Outcome, when requests filed issues (observe again)
    rechecked: str | None = None
    warnings: list[str] = field(default_factory=list)

    def actions(self) -> list[Any]:
        return self.asked.actions() if self.asked else []

    def done(self, issues: dict[int, Any], tracking: int) -> list[str]:
        if self.asked is None:
            return []
        return done_lines(self.asked, issues if self.opened else {}, self.rechecked, tracking)


def requests_first(
    repo: Repo,
    tracking: ObservedIssue | None,
    entries: Sequence[ChecklistEntry],
    *,
    event: EditEvent | None,
    verified: tuple[str, Sequence[Any]] | None,
    verifier: Verifier | None,
    dry_run: bool,
    open_items: Callable[[list[int], PanelEdit], Any],
) -> RequestStep:
    """Read the ticked requests, run a re-check's verification (a read), file what was asked
    for through ``open_items`` (``open``), and say how the checklist write clears the boxes."""
    step = RequestStep(verified=verified)
    if tracking is None:
        return step
    block = read_block(tracking.body)
    asked = read_requests(repo, tracking.number, block, entries, event, step.warnings.append)
    step.asked = asked
    step.verified, rechecked = run_verifier(
        asked, verified, None if dry_run else verifier, step.warnings.append
    )
    step.rechecked = step.verified[0] if rechecked and step.verified else None
    files = [r for r in asked.carry if r.kind == "file"]
    done = [*files, *([Request("recheck")] if rechecked else [])]
    step.edit = panel_edit(asked, done)
    if files and not dry_run:
        # The recheck's box stays ticked until the sync's own write, after its comments.
        step.opened = open_items(asked.files(), panel_edit(asked, files))
        step.warnings += step.opened.warnings
    return step
