"""Carry out ``open`` and ``sync``: observe GitHub, plan (pure), apply, converge.

Every write path is safe to re-run after a crash at any point:
- issues are found by marker before anything is created, so a rerun never files twice;
- after creating, the list is read again and extra issues for an item (a retried POST that
  succeeded twice, or two runs at once) are closed as duplicates of the lowest number;
- the tracking issue's body is re-read right before it is written and the checklist edit is
  re-applied to that fresh body, so a human's edit made meanwhile is kept;
- an issue is artbot's only if its marker sits in the owned region and an identity artbot
  writes as wrote it (:mod:`artbot.ownership`); anything else with a marker is reported and
  never written to or closed;
- the tracking issue is checked before the first write (it exists, is an issue, is not
  locked, its block is well formed): a bad one stops the run with nothing written;
- only the artbot-owned region of a generated issue is ever rewritten;
- a fixed item is filed, then closed as completed; its body carries a hidden "filed closed"
  line outside the owned region, so a re-run after a crash between the two closes it, and an
  issue a human reopened (``state_reason: reopened``) is never closed again;
- a status change is commented on before the body's status table is updated, and the
  comment carries the status it states, so a re-run after a crash in between posts no second
  comment;
- sub-issue writes come before the checklist write that records them, and the record holds
  only what succeeded, so after a crash the next sync reads the list and settles the rest
  (see :mod:`artbot.apply_subissues`);
- a ticked request is cleared by the checklist write after what it asked for, never before,
  and what it asks for is itself safe to repeat (filing finds by marker; a re-check comments
  once per status change) (see :mod:`artbot.apply_panel`);
- with ``close_when_fixed``, an issue is closed right after its status comment and before the
  body's status is updated, so a re-run closes it without a second comment
  (see :mod:`artbot.apply_status`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .apply_actions import SyncRun, carry_out_sync, write_checklist
from .apply_labels import ensure_labels
from .apply_panel import PanelEdit, Verifier, requests_first
from .apply_status import observe_comments, verification_comments
from .apply_subissues import (
    add_filed,
    observe_sub_issues,
    plan_step,
    unavailable_warning,
    wanted_sub_issues,
)
from .catalog import Catalog
from .checklist import read_block
from .errors import BadInput, RemoteError
from .identity import Identity, establish, learn, learn_from_new
from .models import Finding, ObservedIssue
from .ownership import (
    NO_TRACKING,
    Foreign,
    check_tracking,
    claim,
    recorded_logins,
    seed_title,
    tracking_by_label,
    with_identity,
)
from .panel import EditEvent, declined
from .plan import (
    ChecklistUpToDate,
    CloseDuplicate,
    CloseFixed,
    CloseWhenFixed,
    Create,
    EditBody,
    LabelTracking,
    Plan,
    UpdateChecklist,
    canonical,
    checklist_entries,
    filed_body,
    plan_open,
    plan_sync,
)
from .render import RenderedIssue, render_checklist
from .render_inputs import render_all
from .repo import Repo
from .results import Journal, Result
from .status import load_status
from .status.view import StatusView, status_view
from .subissues import AddSubIssue, SubIssueRecord

Log = Callable[[str], None]


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
    tracking: ObservedIssue | None = None  # the tracking issue as preflight read it
    stopped: str | None = None  # why the run stopped early (--max-writes); the plan is what is left
    results: list[Result] = field(default_factory=list)  # what was done, skipped or failed

    def journal(self, log: Log) -> Journal:
        """The run's one log path, writing into this outcome."""
        return Journal(log, self.done, self.warnings, self.results)


def status_views(catalog: Catalog, findings: Sequence[Finding]) -> dict[int, StatusView | None]:
    """Each item's recorded status (``findings/status/NN.json``) as the issue states it."""
    return {f.item: status_view(f, load_status(catalog.root, f.item)) for f in findings}


def observe(
    repo: Repo, catalog: Catalog, identity: Identity, tracking_issue: int | None
) -> tuple[list[ObservedIssue], list[Foreign]]:
    """The labelled issues, with those that are not artbot's stripped of their marker.

    Raises :class:`artbot.ownership.IdentityUnknown` (nothing written yet) when a marked
    issue has an author artbot cannot place because its own identity cannot be established."""
    listed = repo.list_issues(list(catalog.audit.labels))
    establish(repo, catalog.audit, identity, listed, tracking_issue)
    return claim(listed, catalog.audit, identity.all(), tracking_issue)


def preflight(
    repo: Repo, number: int, observed: Sequence[ObservedIssue] = (), catalog: Catalog | None = None
) -> ObservedIssue:
    """The tracking issue, checked before anything is written (exit 2 with nothing written),
    and with ``catalog``, checked to be the audit's (:func:`artbot.ownership.check_tracking`).

    Taken from the labelled list when it is there (it carries the audit's labels), else read.
    """
    listed = next((i for i in observed if i.number == number), None)
    try:
        tracking = listed or repo.get_issue(number)
    except RemoteError as exc:
        if exc.status in (404, 410):
            gone = "was deleted" if exc.status == 410 else "does not exist"
            raise BadInput(f"tracking issue #{number} {gone} in {repo.full_name}") from None
        raise
    if tracking.pull_request:
        raise BadInput(f"tracking issue #{number} is a pull request, not an issue")
    if tracking.locked:
        raise BadInput(f"tracking issue #{number} is locked; artbot writes to no locked issue")
    read_block(tracking.body)  # two start markers, an end without a start: ChecklistError
    if catalog is not None:
        check_tracking(tracking, catalog.audit, seed_title(catalog.root))
    return tracking


def _with_foreign(plan: Plan, foreign: Sequence[Foreign], outcome_warnings: list[str]) -> Plan:
    outcome_warnings += [f.describe() for f in foreign]
    return Plan((*foreign, *plan.actions))


def open_issues(
    catalog: Catalog,
    repo: Repo,
    items: Sequence[int],
    tracking_issue: int | None,
    *,
    dry_run: bool = False,
    log: Log = lambda _: None,
    identity: Identity | None = None,
    requests: PanelEdit | None = None,
) -> Outcome:
    """File the dedicated issues for ``items`` (once each) and refresh the checklist.

    ``requests`` renders the block's Requests list (default: every tick kept, pending)."""
    identity = identity or Identity()
    findings = [catalog.get(i) for i in items]
    rendered = render_all(catalog, findings, tracking_issue)
    views = status_views(catalog, catalog.findings)
    observed, foreign = observe(repo, catalog, identity, tracking_issue)
    tracking = preflight(repo, tracking_issue, observed, catalog) if tracking_issue else None
    findings, rendered = _not_declined(findings, rendered, tracking, log)
    rendered = _linking_follows(catalog, findings, rendered, observed, tracking_issue)
    plan = plan_open(findings, rendered, observed, catalog.audit, tracking_issue, views)
    if tracking_issue:
        adds = [AddSubIssue(c.item, None, tracking_issue) for c in plan.of(Create)]
        plan = _before_checklist(plan, adds)
    outcome = Outcome(plan, rendered=rendered, tracking=tracking)
    outcome.plan = _with_foreign(plan, foreign, outcome.warnings)
    if dry_run:
        outcome.issues = canonical(observed, catalog.audit)
        outcome.observed = observed
        return outcome

    journal = outcome.journal(log)
    journal.plan(outcome.plan.text())
    creates = plan.of(Create)
    known = {i.number for i in observed}
    if creates:
        labels = [lbl for c in creates for lbl in c.labels]
        journal.extend(ensure_labels(repo, observed, labels, catalog))
    for action in creates:
        body = filed_body(rendered[action.item].body, views.get(action.item))
        observed = _create_once(
            repo, catalog, rendered[action.item], body, observed, journal, identity
        )
    if creates:
        # A retried POST or a concurrent run may have filed an item twice; find out. The
        # issues just created are kept too, in case the list does not show them yet.
        listed, _ = observe(repo, catalog, identity, tracking_issue)
        numbers = {i.number for i in listed}
        observed = [*listed, *(i for i in observed if i.number not in numbers)]
    wanted = {f.item for f in findings}
    again = plan_open(findings, rendered, observed, catalog.audit, None, views)
    for extra in again.of(CloseDuplicate):
        if extra.item in wanted:
            repo.edit_issue(extra.issue, state="closed", state_reason="duplicate")
            line = f"closed #{extra.issue} as a duplicate of #{extra.keep}"
            journal.add(Result.done(line, extra))
    # Fixed items: close what was just filed, or what a crashed run filed and did not close.
    closed = {}
    for fix in again.of(CloseFixed):
        closed[fix.issue] = repo.edit_issue(fix.issue, state="closed", state_reason="completed")
        line = f"item {fix.item}: closed #{fix.issue} as completed ({fix.fixed_in})"
        journal.add(Result.done(line, fix))
    observed = [closed.get(i.number, i) for i in observed]
    outcome.issues = canonical(observed, catalog.audit)
    outcome.observed = observed
    if tracking_issue:
        # Only the issues this run filed (the canonical ones, not duplicates closed above).
        filed = {n: i for n, i in outcome.issues.items() if n in wanted and i.number not in known}
        added = add_filed(repo, tracking_issue, filed, outcome.warnings.append, journal.add)
        entries = checklist_entries(catalog.findings, observed, catalog.audit, None, views)
        result, outcome.checklist = write_checklist(
            repo,
            catalog,
            tracking_issue,
            entries,
            (lambda old: (old or SubIssueRecord()).with_added(added)) if added else None,
            requests,
            identity.known(),
        )
        journal.add(result)
    return outcome


def _not_declined(
    findings: list[Finding],
    rendered: dict[int, RenderedIssue],
    tracking: ObservedIssue | None,
    log: Log,
) -> tuple[list[Finding], dict[int, RenderedIssue]]:
    """``findings`` without the follow-ups a maintainer declined in the tracking issue (their
    decline box ticked: artbot.panel.declined), which are never filed."""
    no = declined(read_block(tracking.body)) if tracking is not None else frozenset()
    for f in findings:
        if f.item in no:
            log(f"item {f.item}: declined in the tracking issue; not filed")
    kept = [f for f in findings if f.item not in no]
    return kept, {i: r for i, r in rendered.items() if i not in no}


def _linking_follows(
    catalog: Catalog,
    findings: Sequence[Finding],
    rendered: dict[int, RenderedIssue],
    observed: Sequence[ObservedIssue],
    tracking_issue: int | None,
) -> dict[int, RenderedIssue]:
    """Follow-ups rendered again with the issue numbers GitHub holds for the items they follow,
    so their first line links that issue (the first rendering, before any request, had none)."""
    follow_ups = [f for f in findings if f.follows is not None]
    if not follow_ups:
        return rendered
    numbers = {item: issue.number for item, issue in canonical(observed, catalog.audit).items()}
    again = render_all(catalog, follow_ups, tracking_issue, issues=numbers)
    return {**rendered, **again}


def _before_checklist(plan: Plan, actions: Sequence[Any]) -> Plan:
    """``plan`` with ``actions`` just before its checklist action (or at the end)."""
    at = next(
        (
            k
            for k, a in enumerate(plan.actions)
            if isinstance(a, (UpdateChecklist, ChecklistUpToDate))
        ),
        len(plan.actions),
    )
    return Plan((*plan.actions[:at], *actions, *plan.actions[at:]))


def _create_once(
    repo: Repo,
    catalog: Catalog,
    issue: RenderedIssue,
    body: str,
    observed: list[ObservedIssue],
    journal: Journal,
    identity: Identity,
) -> list[ObservedIssue]:
    try:
        created = repo.create_issue(issue.title, body, list(issue.labels))
    except RemoteError:
        # The create may have taken effect before the error (a 502 after the write, a dropped
        # connection). GitHub is the source of truth: look before deciding it failed.
        before = {i.number for i in observed}
        listed = repo.list_issues(list(catalog.audit.labels))
        learn_from_new(repo, catalog.audit, identity, listed, before, issue.item)
        observed, _ = claim(listed, catalog.audit, identity.all(), None)
        if issue.item not in canonical(observed, catalog.audit):
            raise
        created = canonical(observed, catalog.audit)[issue.item]
        line = f"item {issue.item}: the create failed but had taken effect as #{created.number}"
        journal.add(Result.done(line, kind="Create", item=issue.item, issue=created.number))
        return observed
    if created.author and not identity.login:
        learn(repo, identity, created.author)  # what this token writes as, learnt for free
    line = f"item {issue.item}: filed #{created.number} {created.html_url}"
    journal.add(Result.done(line, kind="Create", item=issue.item, issue=created.number))
    return [*observed, created]


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
    event: EditEvent | None = None,
) -> Outcome:
    """Bring generated issues' bodies and the checklist in step with the catalog and GitHub.

    ``verified`` is (version, results of :func:`artbot.verify.verify_code`): each result
    becomes a checklist note, and a comment on the generated issue when its status changed.
    The items' issues become the tracking issue's sub-issues (:mod:`artbot.subissues`);
    ``replace_parent`` moves those that have another parent. Ticked requests in the tracking
    issue are carried out first (:mod:`artbot.apply_panel`): ``verifier`` runs a re-check
    when ``verified`` is None; ``event`` is the ``issues: edited`` event whose sender is
    checked. Otherwise never creates, closes or reopens an issue.
    """
    identity = identity or Identity()
    views = status_views(catalog, catalog.findings)  # a bad status file: exit 2, no request
    observed, foreign = observe(repo, catalog, identity, tracking_issue)
    # Not given: the one issue with the tracking label. Without one no body is edited
    # (rendered without a tracking issue, each would lose its back-link).
    tracking_issue = tracking_issue or tracking_by_label(observed, catalog.audit)
    keep_bodies = tracking_issue is None
    numbers = {item: i.number for item, i in canonical(observed, catalog.audit).items()}
    rendered = render_all(catalog, catalog.findings, tracking_issue, issues=numbers)
    tracking = preflight(repo, tracking_issue, observed, catalog) if tracking_issue else None
    step = requests_first(
        repo,
        tracking,
        checklist_entries(catalog.findings, observed, catalog.audit),
        event=event,
        verified=verified,
        verifier=verifier,
        dry_run=dry_run,
        open_items=lambda items, edit: open_issues(
            catalog, repo, items, tracking_issue, log=log, identity=identity, requests=edit
        ),
    )
    verified = step.verified
    if step.opened is not None and tracking_issue:
        observed, foreign = observe(repo, catalog, identity, tracking_issue)
        tracking = preflight(repo, tracking_issue, observed, catalog)
    notes = None
    if verified is not None:
        from .verify import verification_notes

        # An item with a recorded status is ticked and commented on from that record (one
        # comment per status change); the whole-item verify note and comment are for the rest.
        results = [r for r in verified[1] if views.get(r.item) is None]
        verified = (verified[0], results)
        notes = verification_notes(results)
    templates = catalog.root / "templates"
    block = read_block(tracking.body) if tracking else None
    issues = canonical(observed, catalog.audit)
    # The last reads before planning: the sub-issue list (only when the summary disagrees
    # with the record) and the comments a verification result is about. Planning is pure.
    wanted = wanted_sub_issues(checklist_entries(catalog.findings, observed, catalog.audit))
    old = SubIssueRecord.find(block)
    listed = (
        observe_sub_issues(repo, tracking, wanted, old, replace_parent=replace_parent)
        if tracking is not None
        else None
    )
    read = observe_comments(repo, issues, verified[1]) if verified is not None else {}
    who = (*recorded_logins(block), *identity.known())
    subs = None
    if tracking is not None:
        subs = plan_step(tracking, wanted, old, listed, replace_parent=replace_parent)
    record = subs.expected if subs else None
    plan = plan_sync(
        catalog.findings,
        rendered,
        observed,
        catalog.audit,
        tracking_issue,
        block,
        lambda entries: with_identity(
            render_checklist(
                entries,
                catalog.audit,
                templates,
                record,
                step.edit(block, entries) if step.edit else None,
            ),
            who,
        ),
        notes,
        views,
    )
    plan = _before_checklist(plan, step.actions())
    if subs is not None:
        plan = _before_checklist(plan, subs.plan.actions)
    if keep_bodies:
        plan = Plan(tuple(a for a in plan.actions if not isinstance(a, EditBody)))
    if tracking is not None and catalog.audit.tracking_label:
        wanted_labels = [*catalog.audit.labels, catalog.audit.tracking_label]
        missing = tuple(lbl for lbl in wanted_labels if lbl not in tracking.labels)
        if missing:
            plan = Plan((LabelTracking(tracking.number, missing), *plan.actions))
    outcome = Outcome(plan, issues=issues, observed=observed, tracking=tracking)
    outcome.plan = _with_foreign(plan, foreign, outcome.warnings)
    outcome.warnings += step.warnings
    if subs is not None and not subs.available:
        outcome.warnings.append(subs.skipped or unavailable_warning(subs.parent))
    if keep_bodies:
        outcome.warnings.append(NO_TRACKING)
    if verified is not None:
        comments = verification_comments(read, outcome.issues, *verified)
        outcome.plan = Plan((*outcome.plan.actions, *comments))
    if dry_run:
        return outcome
    journal = outcome.journal(log)
    journal.plan(outcome.plan.text())
    run = SyncRun(
        repo,
        catalog,
        rendered,
        views,
        observed,
        outcome.issues,
        notes,
        subs,
        record,
        journal,
        closing={c.item for c in plan.of(CloseWhenFixed)},
        requests=step.edit,
        logins=who,
    )
    carry_out_sync(run, outcome.plan.actions)
    outcome.checklist = run.checklist
    if tracking_issue:
        journal.extend(
            Result.done(line, kind="Request") for line in step.done(outcome.issues, tracking_issue)
        )
    if step.opened is not None:  # open journalled its own plan and results as it went
        outcome.done[:0] = step.opened.done
        outcome.results[:0] = step.opened.results
    return outcome
