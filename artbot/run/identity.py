"""artbot's own identity for one run: established once, through the :class:`Repo` interface.

In order: learnt from an issue this run created (the author GitHub gave it), else the one
recorded in the tracking issue's checklist block, else the one the cache file kept from an
earlier create, else the token's login (``GET /user``, asked only when some marked issue has
an author artbot cannot otherwise place). When none can be had and such an issue could be
artbot's own, :func:`establish` raises :class:`artbot.tracking.ownership.IdentityUnknown` before
anything is written. Which issues are artbot's, given the identity, is :mod:`.ownership`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..records.models import Audit, ObservedIssue
from ..tracking.ownership import (
    DEFAULT_AUTHORS,
    needs_login,
    unknown_identity,
    unplaced,
)

if TYPE_CHECKING:
    from ..github.client import GitHubRepo as Repo


@dataclass
class Identity:
    """Who artbot writes as: the configured authors, and its identity (``login`` learnt or
    asked this run, and those ``recorded`` in the tracking issue or the cache)."""

    authors: tuple[str, ...] = DEFAULT_AUTHORS
    login: str | None = None
    asked: bool = False
    recorded: tuple[str, ...] = ()

    def known(self) -> tuple[str, ...]:
        """The identity as established so far (the record's first, this run's login last)."""
        return tuple(dict.fromkeys((*self.recorded, *((self.login,) if self.login else ()))))

    def all(self) -> tuple[str, ...]:
        return (*self.authors, *self.known())


def establish(
    repo: Repo,
    audit: Audit,
    identity: Identity,
    listed: Sequence[ObservedIssue],
    tracking_issue: int | None,
    recorded: Sequence[str] = (),
) -> None:
    """Fill in ``identity`` when ``listed`` needs it; raise when it cannot be had.
    ``recorded`` is the identity the tracking issue's block records (read once, by observe)."""
    if identity.known() or not needs_login(listed, audit, identity.all()):
        return
    identity.recorded = tuple(recorded)
    if not identity.recorded:
        remembered = getattr(repo, "remembered_login", None)
        login = remembered() if remembered else None
        identity.recorded = (login,) if login else ()
    if not identity.recorded and not identity.asked:
        identity.login, identity.asked = repo.login(), True
    if not identity.known():
        # A 403 on GET /user means an installation token, which writes as "<slug>[bot]".
        bots_only = bool(getattr(repo, "refused_login", False))
        maybe_ours = unplaced(
            listed, audit, identity.all(), bots_only=bots_only, tracking_issue=tracking_issue
        )
        if maybe_ours:
            raise unknown_identity(maybe_ours)


def learn(repo: Repo, identity: Identity, login: str | None) -> None:
    """This run's identity, from an issue it created; kept in the cache file at once."""
    identity.login = login
    remember = getattr(repo, "remember_login", None)
    if remember and login:
        remember(login)


def learn_from_new(
    repo: Repo,
    audit: Audit,
    identity: Identity,
    listed: Sequence[ObservedIssue],
    before: Collection[int],
    item: int,
) -> None:
    """After a create that failed but may have taken effect: an issue for ``item`` that was
    not there before it is its result, and its author is who this token writes as."""
    if identity.login:
        return
    new = [
        i
        for i in listed
        if i.number not in before
        and i.marker is not None
        and (i.marker.audit, i.marker.item) == (audit.commit, item)
        and i.author
    ]
    if new:
        learn(repo, identity, min(new, key=lambda i: i.number).author)
