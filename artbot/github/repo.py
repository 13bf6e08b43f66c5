"""The repository interface that :mod:`artbot.run.commands` is written against.

:class:`artbot.github.client.GitHubRepo` implements it over HTTP (PyGithub); tests may implement it
in memory. Importing this module loads no GitHub client.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..models import ObservedIssue


class KnownLabels(Protocol):
    """What a repository remembers between runs: the labels artbot has made sure exist."""

    labels: set[str]


class Repo(Protocol):
    """One repository: the reads and writes that ``open`` and ``sync`` need, nothing more.

    Every failure at the remote end leaves as :class:`artbot.errors.RemoteError`.
    """

    @property
    def full_name(self) -> str: ...

    @property
    def cache(self) -> KnownLabels: ...

    def list_issues(self, labels: list[str]) -> list[ObservedIssue]:
        """Every issue (open and closed) carrying all ``labels``; pull requests skipped."""
        ...

    def get_issue(self, number: int, *, fresh: bool = False) -> ObservedIssue:
        """One issue; ``fresh`` bypasses any cache (used right before writing its body)."""
        ...

    def login(self) -> str | None:
        """The login the token writes as, or None where GitHub does not say."""
        ...

    def existing_labels(self) -> set[str]: ...

    def permission(self, login: str) -> str:
        """``login``'s permission on the repository: admin, write, read or none."""
        ...

    def create_label(
        self, name: str, color: str | None = None, description: str | None = None
    ) -> None:
        """Create a label; one that already exists is not an error."""
        ...

    def create_issue(self, title: str, body: str, labels: list[str]) -> ObservedIssue: ...

    def edit_issue(self, number: int, **fields: Any) -> ObservedIssue:
        """PATCH the issue with ``fields`` (title, body, state, ...); returns the edited issue."""
        ...

    def add_labels(self, number: int, labels: list[str]) -> None: ...

    def comment(self, number: int, body: str) -> None: ...

    def list_comments(self, number: int) -> list[dict[str, Any]]: ...

    # Sub-issues (GitHub's native progress on the tracking issue). A 404 leaves as
    # SubIssuesUnavailable, a 422 as SubIssueRefused (both RemoteError).

    def list_sub_issues(self, number: int) -> list[ObservedIssue]:
        """#number's sub-issues, in GitHub's order (a conditional read)."""
        ...

    def add_sub_issue(self, number: int, sub_issue_id: int, *, replace_parent: bool) -> None:
        """Make the issue with id ``sub_issue_id`` (not its number) a sub-issue of #number."""
        ...

    def remove_sub_issue(self, number: int, sub_issue_id: int) -> None: ...

    def reprioritize_sub_issue(
        self, number: int, sub_issue_id: int, *, after_id: int | None, before_id: int | None
    ) -> None:
        """Move a sub-issue right after ``after_id`` or right before ``before_id``."""
        ...

    def parent_of(self, number: int) -> tuple[str, int] | None:
        """#number's parent issue as (repository full name, number), or None."""
        ...
