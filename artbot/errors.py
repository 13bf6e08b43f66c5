"""The one error family artbot raises; :func:`artbot.report.output.fail` turns each into a message
and an exit code: 0 ok, 1 remote or run failure (:class:`RemoteError`, :class:`ReproFailed`,
:class:`ChecklistError`, any other :class:`ArtbotError`), 2 bad input or usage
(:class:`BadInput`, :class:`CatalogInvalid`, click's usage errors)."""

from __future__ import annotations

from dataclasses import dataclass


class ArtbotError(Exception):
    """An expected failure with a message a user can act on."""

    exit_code = 1


class BadInput(ArtbotError):
    """The catalog, a template or the command line is wrong; nothing was sent anywhere."""

    exit_code = 2


@dataclass(frozen=True)
class Problem:
    """One validation problem, located in a file."""

    path: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        field = f" {self.field}:" if self.field else ""
        return f"{where}:{field} {self.message}"


class CatalogInvalid(BadInput):
    """The catalog did not validate; carries every problem found in one pass."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class RemoteError(ArtbotError):
    """GitHub (or the sandbox) refused or failed a request; ``status`` is its HTTP status
    when GitHub answered at all."""

    exit_code = 1

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class SubIssuesUnavailable(RemoteError):
    """The sub-issue endpoints answered 404: a GitHub (Enterprise Server) without them."""


class SubIssueRefused(RemoteError):
    """GitHub refused a sub-issue change with 422 (another parent, the cap of 100, ...)."""


class ReproFailed(ArtbotError):
    """A reproduction crashed, timed out or printed no verdict."""

    exit_code = 1


class ChecklistError(ArtbotError, ValueError):
    """The tracking issue's body has broken or duplicated checklist markers, or the block does."""


class ReleaseUnavailable(ArtbotError):
    """The wheel of a release could not be fetched or unpacked."""

    exit_code = 1
