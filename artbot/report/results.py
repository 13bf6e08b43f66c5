"""What carrying out a plan did: one :class:`Result` per write or decision, one log path, and
the count of writes against ``--max-writes`` (:class:`Budget`).

A result is *done* (what was written), *skipped* (nothing to write, and why) or *failed* (what
GitHub answered). ``--json``, the Actions step summary and the action's outputs are built from
the results, so they report what was done, not what was planned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import ArtbotError

Status = Literal["done", "skipped", "failed"]
Log = Callable[[str], None]


@dataclass(frozen=True)
class Result:
    status: Status
    line: str  # done: what was written; skipped or failed: what, and why
    action: Any = None  # the plan's action this is the result of (None: a warning of no step)
    item: int | None = None
    issue: int | None = None

    @classmethod
    def done(cls, line: str, action: Any = None, **kw: Any) -> Result:
        return cls("done", line, **{**_about(action), **kw})

    @classmethod
    def skipped(cls, line: str, action: Any = None, **kw: Any) -> Result:
        return cls("skipped", line, **{**_about(action), **kw})

    @classmethod
    def failed(cls, line: str, action: Any = None, **kw: Any) -> Result:
        return cls("failed", line, **{**_about(action), **kw})

    @property
    def kind(self) -> str:
        """The action's class name, for ``--json`` and the step summary."""
        return type(self.action).__name__ if self.action is not None else ""

    def text(self) -> str:
        return self.line if self.status == "done" else f"{self.status}: {self.line}"

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "line": self.line,
            "action": self.kind or None,
            "item": self.item,
            "issue": self.issue,
        }


def _about(action: Any) -> dict[str, Any]:
    if action is None:
        return {}
    return {
        "action": action,
        "item": getattr(action, "item", None),
        "issue": getattr(action, "issue", None),
    }


@dataclass
class Journal:
    """The one log path of a run: the plan once, then each result once, in the order they
    happened. ``done`` and ``warnings`` are the outcome's lists, kept in step; a failure is
    not logged here but kept as a warning, which the report prints once (annotated in
    Actions)."""

    log: Log
    done: list[str]
    warnings: list[str]
    results: list[Result] = field(default_factory=list)

    def plan(self, text: str) -> None:
        self.log("plan:")
        for line in text.splitlines():
            self.log(f"  {line}")

    def add(self, *results: Result | None) -> None:
        for result in results:
            if result is None:
                continue
            self.results.append(result)
            if result.status == "failed":
                # Printed once, with the warnings at the end (annotated in Actions).
                self.warnings.append(result.line)
                continue
            if result.status == "done":
                self.done.append(result.line)
            self.log(result.text())

    def extend(self, results: Iterable[Result | None]) -> None:
        self.add(*results)


class WriteBudgetSpent(ArtbotError):
    """The run made as many writes as it was allowed (``--max-writes``); nothing more was
    sent. As safe as a crash at that point: the next run does what is left."""

    exit_code = 0

    def __init__(self, limit: int):
        super().__init__(f"stopped after {limit} write(s) (--max-writes {limit})")
        self.limit = limit


@dataclass
class Budget:
    """``--max-writes``: every write is counted before it is sent."""

    limit: int | None = None
    writes: int = 0

    def spend(self) -> None:
        if self.limit is not None and self.writes >= self.limit:
            raise WriteBudgetSpent(self.limit)
        self.writes += 1
