"""A write budget per run (``--max-writes N``, the action's ``max-writes``).

:class:`WriteBudget` wraps a :class:`~artbot.github.repo.Repo`: reads pass through, and the write
that would be the (N+1)th raises :class:`WriteBudgetSpent` before anything is sent. Stopping
there is as safe as a crash at that point, which every write path of ``open`` and ``sync``
survives (:mod:`artbot.run.commands`): the next run picks up what is left. The CLI then plans the
same command again as a dry run (reads only) and reports that plan as what is left.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ArtbotError


class WriteBudgetSpent(ArtbotError):
    """The run made as many writes as it was allowed; nothing more was sent."""

    exit_code = 0

    def __init__(self, limit: int, writes: list[str]):
        super().__init__(f"stopped after {limit} write(s) (--max-writes {limit})")
        self.limit = limit
        self.writes = writes


class WriteBudget:
    """``repo`` with at most ``limit`` writes; ``writes`` says what each one was."""

    def __init__(self, repo: Any, limit: int):
        if limit < 1:
            raise ValueError("a write budget is at least 1")
        self._repo = repo
        self.limit = limit
        self.writes: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._repo, name)  # reads, full_name, cache

    def _spend(self, what: str) -> None:
        if len(self.writes) >= self.limit:
            raise WriteBudgetSpent(self.limit, list(self.writes))
        self.writes.append(what)

    def create_label(self, name: str, *args: Any, **kwargs: Any) -> None:
        self._spend(f"create label {name!r}")
        self._repo.create_label(name, *args, **kwargs)

    def create_issue(self, title: str, body: str, labels: list[str]) -> Any:
        self._spend(f"create issue {title!r}")
        return self._repo.create_issue(title, body, labels)

    def edit_issue(self, number: int, **fields: Any) -> Any:
        self._spend(f"edit #{number} ({', '.join(sorted(fields))})")
        return self._repo.edit_issue(number, **fields)

    def add_labels(self, number: int, labels: list[str]) -> None:
        self._spend(f"label #{number}")
        self._repo.add_labels(number, labels)

    def comment(self, number: int, body: str) -> None:
        self._spend(f"comment on #{number}")
        self._repo.comment(number, body)

    def add_sub_issue(self, number: int, sub_issue_id: int, *, replace_parent: bool) -> None:
        self._spend(f"add a sub-issue to #{number}")
        self._repo.add_sub_issue(number, sub_issue_id, replace_parent=replace_parent)

    def remove_sub_issue(self, number: int, sub_issue_id: int) -> None:
        self._spend(f"remove a sub-issue from #{number}")
        self._repo.remove_sub_issue(number, sub_issue_id)

    def reprioritize_sub_issue(
        self, number: int, sub_issue_id: int, *, after_id: int | None, before_id: int | None
    ) -> None:
        self._spend(f"move a sub-issue of #{number}")
        self._repo.reprioritize_sub_issue(
            number, sub_issue_id, after_id=after_id, before_id=before_id
        )


def within_budget(run: Callable[[bool], Any], dry_run: bool) -> Any:
    """``run(dry_run)``; when the write budget is spent, what is left: the same command
    planned again as a dry run (reads only), with the writes made as what was done."""
    try:
        return run(dry_run)
    except WriteBudgetSpent as stop:
        left = run(True)
        left.stopped = str(stop)
        left.done = [f"wrote: {w}" for w in stop.writes]
        left.warnings.append(f"{stop}; the plan below is what is left for the next run")
        return left
