"""The one error family artbot raises; ``cli.py`` turns each into a message and an exit code."""

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

    def annotation(self) -> str:
        """The same problem as a GitHub Actions workflow command."""
        loc = f"file={self.path}" + (f",line={self.line}" if self.line else "")
        text = f"{self.field}: {self.message}" if self.field else self.message
        # Workflow commands end at a newline; escape as the Actions toolkit does.
        text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        return f"::error {loc}::{text}"


class CatalogInvalid(BadInput):
    """The catalog did not validate; carries every problem found in one pass."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class RemoteError(ArtbotError):
    """GitHub (or the sandbox) refused or failed a request."""

    exit_code = 1
