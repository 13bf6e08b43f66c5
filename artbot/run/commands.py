"""``open`` and ``sync``: one straight line, each step once (docs/design.md, step 4).

    observe (read GitHub) -> render -> plan (pure) -> render the block -> send (in order, once)

``open`` and ``sync`` are the same line under another :class:`~artbot.run.observe.Scope`. A
dry run stops after the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..records.catalog import Catalog
from ..records.observed import ObservedIssue
from ..render.issue import RenderedIssue, dating_sentence, render_checklist
from ..render.prepare import render_all
from ..report.results import Journal, Result
from ..tracking.block import TrackingBlock, compose
from ..tracking.record import Memory
from ..tracking.requests import CarryOutRequest, DropRequest, RevertTick, panel
from .actions import BlockPlan, Plan
from .execute import Budget, Execution, References, execute
from .identity import Identity
from .issues import canonical
from .observe import Ask, Scope, Snapshot, Verified, Verifier, observe, status_views
from .plan import Want, plan_block, plan_run
from .status_comments import status_texts

if TYPE_CHECKING:
    from ..github.client import GitHubRepo as Repo

Log = Callable[[str], None]

__all__ = ["Identity", "Outcome", "open_issues", "status_views", "sync"]


@dataclass
class Outcome:
    """What a run did, for printing, ``--json`` and the Actions step summary."""

    plan: Plan
    done: list[str] = field(default_factory=list)  # the lines of the results done
    issues: dict[int, ObservedIssue] = field(default_factory=dict)  # item -> canonical issue
    observed: list[ObservedIssue] = field(default_factory=list)
    rendered: dict[int, RenderedIssue] = field(default_factory=dict)
    checklist: str | None = None
    warnings: list[str] = field(default_factory=list)
    tracking: ObservedIssue | None = None  # the tracking issue as observe read it
    stopped: str | None = None  # why the run stopped early (--max-writes); the plan is what is left
    results: list[Result] = field(default_factory=list)  # what was done, skipped or failed

    def journal(self, log: Log) -> Journal:
        """The run's one log path, writing into this outcome."""
        return Journal(log, self.done, self.warnings, self.results)


def render_block(
    catalog: Catalog, block: BlockPlan | None, now: TrackingBlock | None
) -> str | None:
    """The block as the plan writes it, rendered once, right after planning: the checklist,
    the Requests list (the ticks read now, those this run carries out, reverts or drops
    cleared), the sub-issue notes and the record. An issue filed earlier in the run is named
    by its reference (:func:`artbot.run.blockwrite.ref`), looked up when the block is written."""
    if block is None:
        return None
    now = now or TrackingBlock()
    if block.asked is not None:
        requests = block.asked.panel_for(
            block.entries, now.ticked, now.note, done=block.done, declined=now.declined
        )
    else:
        requests = panel(block.entries, now.ticked, now.note, now.declined)
    templates = catalog.root / "templates"
    checklist = render_checklist(
        block.entries, catalog.audit, templates, requests, dating_sentence(catalog)
    )
    items = {e.issue: e.item for e in block.entries if e.issue is not None}
    return compose(checklist, Memory(block.logins, block.record, requests.note), items)


def run(
    catalog: Catalog,
    repo: Repo,
    ask: Ask,
    *,
    dry_run: bool = False,
    log: Log = lambda _: None,
    identity: Identity | None = None,
    verified: Verified | None = None,
    verifier: Verifier | None = None,
    max_writes: int | None = None,
) -> Outcome:
    """One run: observe, render, plan, render the block, then (unless ``dry_run``) send it."""
    identity = identity or Identity()
    in_step, files = ask.scope.in_step, ask.scope.files
    rendered: dict[int, RenderedIssue] = {}
    if not in_step:  # a body over GitHub's limit: exit 2 before any request
        rendered = render_all(catalog, [catalog.get(i) for i in files], ask.tracking)
    views = status_views(catalog, catalog.findings)  # a bad status file: exit 2 here too
    snap = observe(
        repo,
        catalog,
        ask,
        identity,
        views,
        verified=verified,
        verifier=None if dry_run else verifier,
    )
    found = canonical(snap.issues, catalog.audit)
    # A follow-up's first line links the issue of the item it follows, as GitHub holds it.
    numbers = {item: issue.number for item, issue in found.items()}
    too_long: list[str] = []  # sync: an item whose body is over GitHub's limit is skipped
    if in_step:  # the tracking issue may have been found (artbot.tracking.discover)
        rendered = render_all(
            catalog, catalog.findings, snap.number, issues=numbers, too_long=too_long.append
        )
    elif ask.tracking != snap.number:  # the tracking issue was found, not configured
        rendered = render_all(catalog, [catalog.get(i) for i in files], snap.number, issues=numbers)
    else:  # the first rendering (before any request) could not know those numbers
        follow_ups = [catalog.get(i) for i in files if catalog.get(i).follows is not None]
        rendered |= render_all(catalog, follow_ups, ask.tracking, issues=numbers)
    notes = None
    if in_step and snap.verified is not None:
        from ..verify.notes import verification_notes

        # An item with a recorded status is ticked and commented on from that record (one
        # comment per status change); the whole-item verify note and comment are for the rest.
        notes = verification_notes([r for r in snap.verified[1] if views.get(r.item) is None])
    want = Want(
        ask.scope,
        catalog.audit,
        tuple(catalog.findings),
        rendered,
        views,
        status_texts=status_texts(catalog, found, views) if in_step else None,
        notes=notes,
        logins=snap.configured,
        replace_parent=ask.replace_parent,
    )
    plan = plan_run(want, snap)
    plan = plan_block(plan, render_block(catalog, plan.block, snap.block), snap.block)
    outcome = Outcome(plan, issues=found, observed=list(snap.issues), tracking=snap.tracking)
    outcome.rendered = {i: rendered[i] for i in files if i in rendered}
    outcome.warnings += [f.describe() for f in snap.foreign]
    outcome.warnings += [*snap.warnings, *plan.warnings, *too_long]
    if dry_run:
        return outcome
    journal = outcome.journal(log)
    listed = snap.sub_issues if isinstance(snap.sub_issues, tuple) else ()
    ids = {i.number: i.id for i in (*snap.issues, *listed) if i.id is not None}
    refs = References(list(snap.issues), ids)
    left, stopped = execute(Execution(repo, Budget(max_writes), journal, refs), plan)
    outcome.issues = canonical(refs.observed, catalog.audit)
    outcome.observed = refs.observed
    outcome.checklist = refs.checklist
    if stopped is not None:
        outcome.plan, outcome.stopped = left, str(stopped)
        outcome.warnings.append(f"{stopped}; the plan below is what is left for the next run")
    elif snap.asked is not None and snap.number is not None:
        journal.extend(_done(snap, refs))
    return outcome


def _done(snap: Snapshot, refs: References) -> list[Result]:
    """What was done about each ticked request, for the log, ``--json`` and the summary: a
    result of the plan's fact about it."""
    asked, tracking = snap.asked, snap.number
    assert asked is not None and tracking is not None
    out = []
    for r in asked.carry:
        about = CarryOutRequest(tracking, r.key, r.text)
        if r.kind == "file" and r.item in refs.filed:
            issue = refs.filed[r.item]
            line = f"request in #{tracking}: filed item {r.item} as #{issue.number}"
            out.append(Result.done(line, about, item=r.item, issue=issue.number))
        elif r.kind == "decline":
            line = f"request in #{tracking}: declined follow-up {r.item}; it is never filed"
            out.append(Result.done(line, about, item=r.item))
        elif r.kind == "recheck" and snap.rechecked and snap.verified:
            line = f"request in #{tracking}: re-checked against openpipe-art {snap.verified[0]}"
            out.append(Result.done(line, about))
    for r in asked.revert:
        tick = RevertTick(tracking, r.key, r.text, asked.sender or "", asked.why)
        if asked.why == "unattributed":
            why = "no edit by someone with write access made it; tick it again to ask"
            line = f"request in #{tracking}: cleared the tick on {r.text!r} ({why})"
            out.append(Result.done(line, tick, item=r.item))
            continue
        why = (
            f"GitHub did not say whether @{asked.sender} has write access"
            if asked.why == "unchecked"
            else "write access is needed to ask artbot from an edit"
        )
        line = f"request in #{tracking}: reverted @{asked.sender}'s tick on {r.text!r} ({why})"
        out.append(Result.done(line, tick, item=r.item))
    for r in asked.drop:
        line = f"request in #{tracking}: {r.text!r} no longer applies; cleared"
        out.append(Result.done(line, DropRequest(tracking, r.key, r.text), item=r.item))
    return out


def open_issues(
    catalog: Catalog,
    repo: Repo,
    items: Sequence[int],
    tracking_issue: int | None,
    *,
    dry_run: bool = False,
    log: Log = lambda _: None,
    identity: Identity | None = None,
    max_writes: int | None = None,
) -> Outcome:
    """File the dedicated issues for ``items`` (once each) and refresh the checklist."""
    ask = Ask(Scope(files=tuple(items)), tracking_issue)
    return run(
        catalog, repo, ask, dry_run=dry_run, log=log, identity=identity, max_writes=max_writes
    )


def sync(
    catalog: Catalog,
    repo: Repo,
    tracking_issue: int | None,
    *,
    dry_run: bool = False,
    verified: tuple[str, Sequence[Any]] | None = None,
    log: Log = lambda _: None,
    replace_parent: bool = False,
    identity: Identity | None = None,
    verifier: Verifier | None = None,
    event: Any = None,
    max_writes: int | None = None,
) -> Outcome:
    """Bring generated issues' bodies and the checklist in step with the catalog and GitHub.

    ``verified`` is (version, results of :func:`artbot.verify.rejudge.verify_code`), else
    ``verifier`` runs a re-check when one is ticked; ``replace_parent`` moves sub-issues that
    have another parent; ``event`` is the ``issues: edited`` event whose sender is checked.
    Beyond a ticked request and ``close_when_fixed``, never creates, closes or reopens an issue.
    """
    ask = Ask(Scope(in_step=True), tracking_issue, event=event, replace_parent=replace_parent)
    return run(
        catalog,
        repo,
        ask,
        dry_run=dry_run,
        log=log,
        identity=identity,
        verified=verified,
        verifier=verifier,
        max_writes=max_writes,
    )
