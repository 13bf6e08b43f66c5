"""The one read step of a run: everything ``open`` or ``sync`` needs from GitHub, into one
immutable :class:`Snapshot`, before anything is planned or written. What is read, in which
order and when, is docs/design.md's "observe".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import BadInput, RemoteError
from ..records.catalog import Catalog
from ..records.marker import owned_region
from ..records.models import Finding
from ..records.observed import ObservedIssue
from ..render.status_view import StatusView, stated_status, status_view
from ..status import load_status
from ..tracking.block import TrackingBlock
from ..tracking.discover import find_tracking
from ..tracking.ownership import Foreign, check_tracking, claim, seed_title
from ..tracking.requests import WRITE_PERMISSIONS, Asked, EditEvent, sort_ticks
from .identity import Identity
from .issues import canonical, checklist_entries
from .subissue_writes import Listed, observe_sub_issues, wanted_sub_issues

if TYPE_CHECKING:
    from ..github.client import GitHubRepo as Repo

Warn = Callable[[str], None]
# (version, results of verify_code), run only when a re-check is asked for and none was given.
Verifier = Callable[[], tuple[str, Sequence[Any]]]
Verified = tuple[str, Sequence[Any]]


@dataclass(frozen=True)
class Scope:
    """What a run is for: the items to file (``open``'s), and whether to keep everything
    else in step (``sync``: labels, status, bodies, sub-issues, the ticked requests, whose
    filing requests it files too)."""

    files: tuple[int, ...] = ()
    in_step: bool = False


@dataclass(frozen=True)
class Ask:
    """What a command asks of a run: its scope, the tracking issue, the edit that started it."""

    scope: Scope
    tracking: int | None
    event: EditEvent | None = None
    replace_parent: bool = False


@dataclass(frozen=True)
class Snapshot:
    """What GitHub held when the run read it; planning reads this and nothing else."""

    issues: tuple[ObservedIssue, ...]  # the labelled list, markers of foreign issues removed
    foreign: tuple[Foreign, ...] = ()
    tracking: ObservedIssue | None = None
    block: TrackingBlock | None = None
    labels: frozenset[str] = frozenset()  # labels known to exist
    asked: Asked | None = None
    sub_issues: Listed = None
    comments: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    verified: Verified | None = None
    rechecked: bool = False  # the re-check request is carried out by ``verified``
    warnings: tuple[str, ...] = ()
    logins: tuple[str, ...] = ()  # whose marked issues are artbot's (the record's, configured)
    configured: tuple[str, ...] = ()  # the logins configured for this run (artbot writes as)

    @property
    def number(self) -> int | None:
        return self.tracking.number if self.tracking else None


def status_views(catalog: Catalog, findings: Sequence[Finding]) -> dict[int, StatusView | None]:
    """Each item's recorded status (``findings/status/NN.json``) as the issue states it."""
    return {f.item: status_view(f, load_status(catalog.root, f.item)) for f in findings}


def preflight(
    repo: Repo, number: int, listed: Sequence[ObservedIssue], catalog: Catalog
) -> tuple[ObservedIssue, TrackingBlock]:
    """The tracking issue and its block, checked before anything is written (exit 2 with
    nothing written): it exists, is an issue, is not locked, its block is well formed, and it
    is the audit's (:func:`artbot.tracking.ownership.check_tracking`). Taken from the
    labelled list when it is there (it carries the audit's labels), else read."""
    tracking = next((i for i in listed if i.number == number), None)
    try:
        tracking = tracking or repo.get_issue(number)
    except RemoteError as exc:
        if exc.status in (404, 410):
            gone = "was deleted" if exc.status == 410 else "does not exist"
            raise BadInput(f"tracking issue #{number} {gone} in {repo.full_name}") from None
        raise
    if tracking.pull_request:
        raise BadInput(f"tracking issue #{number} is a pull request, not an issue")
    if tracking.locked:
        raise BadInput(f"tracking issue #{number} is locked; artbot writes to no locked issue")
    block = TrackingBlock.parse(tracking.body)  # broken markers: ChecklistError, exit 2
    check_tracking(tracking, catalog.audit, seed_title(catalog.root), has_block=block.present)
    return tracking, block


def observe(
    repo: Repo,
    catalog: Catalog,
    ask: Ask,
    identity: Identity,
    views: Mapping[int, StatusView | None],
    *,
    verified: Verified | None = None,
    verifier: Verifier | None = None,
) -> Snapshot:
    """Read what the run needs (see the module docstring); raises before any write."""
    audit = catalog.audit
    listed = repo.list_issues(list(audit.labels))
    number = ask.tracking
    in_step = ask.scope.in_step
    warnings: list[str] = []
    if number is None:  # none configured: found by its label or its text, else exit 2 here
        seed = seed_title(catalog.root)
        number = find_tracking(listed, (i for i in repo.list_open_issues()), audit, seed)
        warnings.append(
            f"tracking issue: none configured; using #{number}, the issue that holds the "
            f"audit's commit and checklist (--tracking-issue {number} or "
            f"ARTBOT_TRACKING_ISSUE={number} names it)"
        )
    tracking, block = preflight(repo, number, listed, catalog)
    # artbot's logins: as configured, and those the record keeps from earlier configurations.
    configured = identity.configured(audit)
    logins = tuple(dict.fromkeys((*(block.logins if block else ()), *configured)))
    issues, foreign = claim(listed, audit, logins, number)
    entries = checklist_entries(catalog.findings, issues, audit)
    asked = None
    if tracking is not None and block is not None and in_step:
        asked = _requests(repo, tracking.number, block, entries, ask.event, warnings.append)
    rechecked = False
    if asked is not None:
        verified, rechecked = _run_verifier(asked, verified, verifier, warnings.append)
    found = canonical(issues, audit)
    labels = _labels(repo, issues)
    subs: Listed = None
    if tracking is not None and in_step:
        subs = observe_sub_issues(
            repo,
            tracking,
            wanted_sub_issues(entries),
            block.record if block else None,
            replace_parent=ask.replace_parent,
        )
    about = _commented(catalog.findings, found, views, verified) if in_step else []
    # A marker counts only in a comment artbot wrote: by its identity, or by the issue's author
    # (the issue is artbot's, so its author is one of artbot's identities).
    ours = {a.casefold() for a in logins}
    authors = {i.number: (i.author or "").casefold() for i in found.values()}
    comments = {
        n: tuple(
            c.get("body") or ""
            for c in repo.list_comments(n)
            if _author(c) in ours | {authors.get(n, "")} - {""}
        )
        for n in about
    }
    return Snapshot(
        tuple(issues),
        tuple(foreign),
        tracking,
        block,
        labels,
        asked,
        subs,
        comments,
        verified,
        rechecked,
        tuple(warnings),
        logins,
        configured,
    )


def _labels(repo: Repo, issues: Sequence[ObservedIssue]) -> frozenset[str]:
    """The labels known to exist: those on the listed issues and those an earlier run made
    sure of (the cache). Any other a run uses is created (GitHub answers 422 when it exists
    already, which counts as done): never a request of its own to find out."""
    return frozenset({lbl for i in issues for lbl in i.labels} | repo.cache.labels)


def _requests(
    repo: Repo,
    tracking: int,
    block: TrackingBlock,
    entries: Sequence[Any],
    event: EditEvent | None,
    warn: Warn,
) -> Asked:
    """The ticked requests, sorted (:func:`artbot.tracking.requests.sort_ticks`): without an
    edit event none is carried out; with one, only those the edit ticked, and the sender's
    permission is asked only then. A lookup that fails carries nothing out (fails closed)."""
    if event is None:
        return sort_ticks(tracking, block.ticked, entries, declined=block.declined)
    if event.issue != tracking:
        warn(f"requests: the edit was to #{event.issue}, not the tracking issue #{tracking}")
        return Asked(tracking)
    sender, added = event.sender, event.added
    no = block.declined
    asked = sort_ticks(tracking, block.ticked, entries, sender=sender, added=added, declined=no)
    if not asked.carry:
        return asked  # nothing this edit ticked applies: no need to ask who edited
    try:
        allowed = repo.permission(sender) in WRITE_PERMISSIONS
    except RemoteError as exc:
        warn(f"requests: could not ask whether @{sender} may write ({exc}); nothing carried out")
        return sort_ticks(
            tracking,
            block.ticked,
            entries,
            sender=sender,
            may_write=False,
            why="unchecked",
            declined=no,
        )
    return sort_ticks(
        tracking, block.ticked, entries, sender=sender, added=added, may_write=allowed, declined=no
    )


def _run_verifier(
    asked: Asked, verified: Verified | None, verifier: Verifier | None, warn: Warn
) -> tuple[Verified | None, bool]:
    """(the verification this run uses, whether the re-check request is carried out)."""
    if not asked.recheck:
        return verified, False
    if verified is not None:
        return verified, True  # this run checks the newest release anyway
    if verifier is None:
        warn("requests: a re-check was asked for; this run does not verify (it stays ticked)")
        return None, False
    from ..errors import ArtbotError

    try:
        return verifier(), True
    except ArtbotError as exc:
        warn(f"requests: the re-check did not run ({exc}); it stays ticked")
        return None, False
    except ImportError as exc:  # the reproductions' extra (torch) is not installed
        warn(f"requests: the re-check needs artbot[repro] ({exc.name}); it stays ticked")
        return None, False


def _author(comment: Mapping[str, Any]) -> str:
    user = comment.get("user")
    login = user.get("login") if isinstance(user, Mapping) else None
    return login.casefold() if isinstance(login, str) else ""


def _commented(
    findings: Sequence[Finding],
    found: Mapping[int, ObservedIssue],
    views: Mapping[int, StatusView | None],
    verified: Verified | None,
) -> list[int]:
    """The issues whose comments the plan needs: a recorded status their body does not state
    yet (one status comment per change), and those a verification result is about."""
    numbers = set()
    for f in findings:
        issue = found.get(f.item)
        if issue is None or f.issue:
            continue
        view = views.get(f.item)
        if view is not None and stated_status(owned_region(issue.body), f.item) != view.state:
            numbers.add(issue.number)
    for result in verified[1] if verified else ():
        if views.get(result.item) is None and result.item in found:
            numbers.add(found[result.item].number)
    return sorted(numbers)
