"""The sandbox the tests run against: artbot's loopback GitHub (artbot/sandbox/) with what only
tests need, kept out of the shipped package. The ``sandbox`` fixture (tests/conftest.py) is one.

- injected failures (tests/helpers/sandbox_faults.py: ``inject_fault``, ``clear_faults``,
  ``pending_faults``);
- pull requests as their diff, a comment's ``issue_comment`` event and an edit by its author
  (tests/helpers/sandbox_pulls.py: ``seed_pull``, ``comment_event``, ``edit_comment``);
- ART's history for the change behind a fix (tests/helpers/sandbox_commits.py:
  ``seed_commit``, ``seed_tag``);
- an issue closed, reopened or deleted behind the client's back (below).

Each part resets with the sandbox (``reset()``), as the rest of its state does.
"""

from __future__ import annotations

from artbot.sandbox.state import DOCS
from tests.helpers.sandbox_commits import CommitHistory
from tests.helpers.sandbox_faults import FaultInjection
from tests.helpers.sandbox_pulls import PullRequests


class TestSandbox(FaultInjection, PullRequests, CommitHistory):
    """:class:`artbot.sandbox.GitHubSandbox` with faults, pull requests and commits."""

    __test__ = False  # a helper, not a test class, in the modules that import it

    def set_issue_state(
        self, owner: str, name: str, number: int, state: str, state_reason: str | None = None
    ) -> None:
        """Close or reopen an issue behind the client's back."""
        self.edit_issue(owner, name, number, state=state, state_reason=state_reason)

    def delete_issue(self, owner: str, name: str, number: int) -> None:
        """Delete an issue: from now on it answers 410 Gone and leaves the lists."""
        with self._lock:
            repo = self._repo_or_raise(owner, name)
            self._issue(repo, number, DOCS).deleted = True
            self._save()
