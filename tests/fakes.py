"""Pure fakes for the tests at the run's boundary: :class:`MemoryRepo`, a
:class:`artbot.github.repo.Repo` held in dicts, with no HTTP and no PyGithub.

The apply tests that are about decisions (what is filed, edited, linked) run on it; the tests of
the adapter itself (retries, ETags, faults, PyGithub over HTTP) run on the sandbox. Both sides
pass the same contract (tests/test_repo_contract.py), so a fake that drifts from
:class:`artbot.github.client.GitHubRepo` fails there. mypy reads tests/ too: :func:`as_repo`
does not type-check unless ``MemoryRepo`` has every member of ``Repo`` with a compatible signature.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from artbot.errors import SubIssueRefused
from artbot.github.repo import Repo
from artbot.marker import IssueMarker
from artbot.models import ObservedIssue, SubIssuesSummary

ID_BASE = 500_000  # issue ids differ from numbers, as on GitHub
TRACKING = 1111
SEED = Path(__file__).resolve().parents[1] / "findings" / "tracking-issue.md"


@dataclass
class Labels:
    labels: set[str] = field(default_factory=set)


@dataclass
class MemoryRepo:
    """Issues in a dict; every write is appended to ``log``."""

    full_name: str = "OpenPipe/ART"
    cache: Labels = field(default_factory=Labels)
    issues: dict[int, ObservedIssue] = field(default_factory=dict)
    labels: set[str] = field(default_factory=set)
    log: list[str] = field(default_factory=list)
    subs: dict[int, list[int]] = field(default_factory=dict)  # parent -> sub-issues, in order
    comments: dict[int, list[str]] = field(default_factory=dict)
    login_name: str = "artbot-bot"
    roles: dict[str, str] = field(default_factory=dict)  # login (casefolded) -> permission

    def _view(self, issue: ObservedIssue) -> ObservedIssue:
        """The issue as GitHub reports it: with its id and its sub-issue summary."""
        kids = [self.issues[n] for n in self.subs.get(issue.number, [])]
        done = sum(1 for k in kids if k.state == "closed")
        pct = done * 100 // len(kids) if kids else 0
        summary = SubIssuesSummary(len(kids), done, pct)
        return replace(issue, id=ID_BASE + issue.number, sub_issues=summary)

    def add(self, title: str, body: str, labels: tuple[str, ...] = (), **kw: Any) -> ObservedIssue:
        number = max(self.issues, default=0) + 1
        issue = ObservedIssue(
            number=number,
            title=title,
            body=body,
            state=kw.get("state", "open"),
            state_reason=kw.get("state_reason"),
            html_url=f"https://github.com/{self.full_name}/issues/{number}",
            labels=labels,
            marker=IssueMarker.find(body),
            author=kw.get("author", self.login_name),
        )
        self.issues[number] = issue
        return issue

    def list_issues(self, labels: list[str]) -> list[ObservedIssue]:
        found = sorted(self.issues.items())
        return [self._view(i) for n, i in found if set(labels) <= set(i.labels)]

    def get_issue(self, number: int, *, fresh: bool = False) -> ObservedIssue:
        return self._view(self.issues[number])

    def login(self) -> str | None:
        return self.login_name

    def existing_labels(self) -> set[str]:
        return set(self.labels)

    def permission(self, login: str) -> str:
        """As the sandbox answers (artbot.sandbox.collaborators): a role given in ``roles``,
        else the owner admin, the login artbot writes as write, anyone else read."""
        if login.casefold() in self.roles:
            return self.roles[login.casefold()]
        if login.casefold() == self.full_name.split("/")[0].casefold():
            return "admin"
        return "write" if login == self.login_name else "read"

    def create_label(
        self, name: str, color: str | None = None, description: str | None = None
    ) -> None:
        self.log.append(f"label {name}")
        self.labels.add(name)

    def create_issue(self, title: str, body: str, labels: list[str]) -> ObservedIssue:
        issue = self.add(title, body, tuple(labels))
        self.log.append(f"create #{issue.number}")
        return self._view(issue)

    def edit_issue(self, number: int, **fields: Any) -> ObservedIssue:
        self.log.append(f"edit #{number} {sorted(fields)}")
        self.issues[number] = replace(self.issues[number], **fields)
        if "body" in fields:
            self.issues[number] = replace(
                self.issues[number], marker=IssueMarker.find(fields["body"])
            )
        return self._view(self.issues[number])

    def add_labels(self, number: int, labels: list[str]) -> None:
        self.log.append(f"labels #{number}")
        issue = self.issues[number]
        added = tuple(name for name in labels if name not in issue.labels)
        self.issues[number] = replace(issue, labels=issue.labels + added)

    def comment(self, number: int, body: str) -> None:
        self.log.append(f"comment #{number}")
        self.comments.setdefault(number, []).append(body)

    def list_comments(self, number: int) -> list[dict[str, Any]]:
        return [{"body": body} for body in self.comments.get(number, [])]

    def list_sub_issues(self, number: int) -> list[ObservedIssue]:
        return [self._view(self.issues[n]) for n in self.subs.get(number, [])]

    def add_sub_issue(self, number: int, sub_issue_id: int, *, replace_parent: bool) -> None:
        child = sub_issue_id - ID_BASE
        self.log.append(f"sub-issue #{child} of #{number}")
        held = [p for p, kids in self.subs.items() if child in kids]
        if held and not replace_parent:
            raise SubIssueRefused("adding a sub-issue: GitHub answered 422")
        for p in held:
            self.subs[p].remove(child)
        self.subs.setdefault(number, []).append(child)

    def remove_sub_issue(self, number: int, sub_issue_id: int) -> None:
        self.log.append(f"remove sub-issue #{sub_issue_id - ID_BASE} of #{number}")
        self.subs[number].remove(sub_issue_id - ID_BASE)

    def reprioritize_sub_issue(
        self, number: int, sub_issue_id: int, *, after_id: int | None, before_id: int | None
    ) -> None:
        kids, child = self.subs[number], sub_issue_id - ID_BASE
        self.log.append(f"move sub-issue #{child} of #{number}")
        kids.remove(child)
        anchor = (after_id if after_id is not None else before_id or 0) - ID_BASE
        kids.insert(kids.index(anchor) + (after_id is not None), child)

    def parent_of(self, number: int) -> tuple[str, int] | None:
        held = [p for p, kids in self.subs.items() if number in kids]
        return (self.full_name, held[0]) if held else None


def as_repo(memory: MemoryRepo) -> Repo:
    """``memory`` as a :class:`Repo`: the static check that the fake has the Protocol's shape."""
    return memory


M = TypeVar("M", bound=MemoryRepo)


def as_the_audit_left_it(memory: M) -> M:
    """#1108-#1110 filed by hand (no labels yet), then the tracking issue #1111, with the
    seed's title (findings/tracking-issue.md), as artbot's preflight checks it."""
    for number in (1108, 1109, 1110):
        memory.issues[number] = ObservedIssue(
            number, f"issue {number}", "by hand", "open", None, "", (), None
        )
    title = SEED.read_text(encoding="utf-8").split("\n")[0]
    memory.issues[TRACKING] = ObservedIssue(
        TRACKING, title, "Dedicated issues\n", "open", None, "", (), None
    )
    return memory
