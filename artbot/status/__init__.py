"""Where each finding stands in ART: per-claim verdicts at several points, pure data.

A finding is a set of claims and ART fixes them one at a time, so a status is recorded per
claim, at each *point* it was checked: the audit commit, a released openpipe-art version, or a
checkout of ART's main. ``findings/status/NN.json`` holds one :class:`ItemStatus` (written by
``artbot verify --record``), so rendering and planning stay offline and reproducible.

Verdicts of a finding are derived, never stored: ``reproduced`` when every checked claim is
reproduced, ``partial`` when some are, ``fixed`` when none is, ``not checked`` when no claim was
checked at that point.
"""

from __future__ import annotations

import json
from datetime import date
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import BadInput
from ..jsonlimits import loads_limited

STATUS_DIR = Path("findings") / "status"


class ClaimVerdict(StrEnum):
    reproduced = "reproduced"
    fixed = "fixed"
    not_checked = "not checked"


class Verdict(StrEnum):
    """A finding's verdict at one point, derived from its claims."""

    reproduced = "reproduced"
    partial = "partial"
    fixed = "fixed"
    not_checked = "not checked"


def derive(verdicts: list[ClaimVerdict]) -> Verdict:
    checked = [v for v in verdicts if v is not ClaimVerdict.not_checked]
    if not checked:
        return Verdict.not_checked
    reproduced = sum(v is ClaimVerdict.reproduced for v in checked)
    if reproduced == len(checked):
        return Verdict.reproduced
    return Verdict.partial if reproduced else Verdict.fixed


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Method(StrEnum):
    """How a verdict was reached, strongest first."""

    ran = "ran"  # ART's own function, from the release, was executed
    read = "read"  # a check over the release's source, stated in the record, that can go either way
    modelled = "modelled"  # artbot's model of ART's code only


class SourceLine(_Strict):
    """Lines of one file in the code that was checked (wheel layout: ``art/loss.py``; ART's
    repository keeps the same file under ``src/art/``)."""

    path: str
    line: int = Field(ge=1)
    end: int | None = Field(default=None, ge=1)
    look_for: str = Field(default="", description="The line to look for, verbatim")


class Change(_Strict):
    """The upstream change that made a fix, as GitHub's compare/commits API reported it."""

    identified: bool
    commit: str | None = None
    pull: int | None = None
    url: str | None = None
    title: str = ""
    note: str = Field(default="", description="Why the change is not identified, when it isn't")


class FixEvidence(_Strict):
    """What shows a claim fixed at a release: the fixing lines there, and the change if known."""

    lines: list[SourceLine] = Field(min_length=1)
    change: Change | None = None


class Counterexample(_Strict):
    """The first input found on which a claim's property fails, shrunk: what was fed to ART's
    code (``inputs``: names to short values), what was measured, and the bound it broke."""

    inputs: dict[str, str | int | float | bool] = Field(max_length=16)
    measured: float | str
    bound: float | str


class Domain(_Strict):
    """What a claim's property was searched over: the declared input domain (``covers``: shapes,
    dtypes, grad modes, scales, sentinels, group sizes), how many inputs were tried (every
    declared one: no clock cuts the search), the time allowed for shrinking a counterexample
    (``budget_s``), the time it took, and the first counterexample when one was found (a
    reproduced verdict)."""

    covers: str = Field(max_length=400)
    inputs: int = Field(ge=1)
    budget_s: float = Field(gt=0)
    seconds: float = Field(ge=0)
    seed: int | None = None
    counterexample: Counterexample | None = None


class ClaimResult(_Strict):
    verdict: ClaimVerdict
    detail: str = Field(default="", description="What was measured; for not checked, why not.")
    method: Method | None = Field(default=None, description="ran / read / modelled")
    at: list[SourceLine] = Field(
        default_factory=list, description="Where in the checked code the claim's code was found"
    )
    fix: FixEvidence | None = Field(default=None, description="Only for a fixed verdict")
    domain: Domain | None = Field(
        default=None, description="The input domain the property was searched over"
    )


class StatusPoint(_Strict):
    """One point at which the finding was checked."""

    source: Literal["audit", "release", "main"]
    label: str = Field(description="The commit or version, e.g. e2a406a48, 0.5.21")
    checked_on: str = Field(description="ISO date of the check", pattern=r"^\d{4}-\d{2}-\d{2}$")
    artbot_version: str
    how: str = Field(default="", description="What ran: ART's functions, a model, a source reading")
    wheel_sha256: str | None = Field(
        default=None, pattern=r"^[0-9a-f]{64}$", description="sha256 of the release's wheel"
    )
    claims: dict[str, ClaimResult]

    @field_validator("checked_on")
    @classmethod
    def _a_real_date(cls, value: str) -> str:
        """The text lands in the issue: a date, nothing else (no mention, no link)."""
        date.fromisoformat(value)  # ValueError: not a calendar date
        return value

    @property
    def verdict(self) -> Verdict:
        return derive([c.verdict for c in self.claims.values()])

    @property
    def method(self) -> Method | None:
        """How this point's verdicts were reached, the weakest of its checked claims' methods
        (a status table names its column for it: the audit point is ``modelled``, artbot's
        model, not the audit's code); None when no checked claim states one."""
        stated = {c.method for c in self.claims.values() if c.method is not None}
        order = (Method.modelled, Method.read, Method.ran)
        return next((m for m in order if m in stated), None)


class ItemStatus(_Strict):
    item: int
    points: list[StatusPoint] = Field(min_length=1)

    def releases(self) -> list[StatusPoint]:
        return [p for p in self.points if p.source == "release"]

    @property
    def newest(self) -> StatusPoint:
        """The newest release checked, else the audit point."""
        releases = self.releases()
        return releases[-1] if releases else self.points[0]

    @property
    def main(self) -> StatusPoint | None:
        return next((p for p in self.points if p.source == "main"), None)

    def fixed_in(self, claim: str | None = None) -> str | None:
        """The first release at which ``claim`` (or every claim, when None) is fixed and stays
        fixed in every later release checked."""
        first: str | None = None
        for point in self.releases():
            if claim is None:
                ok = point.verdict is Verdict.fixed
            else:
                result = point.claims.get(claim)
                ok = result is not None and result.verdict is ClaimVerdict.fixed
            if ok and first is None:
                first = point.label
            elif not ok:
                first = None
        return first

    def remaining(self) -> list[str]:
        """Claims still reproduced at the newest release checked."""
        return [
            cid for cid, r in self.newest.claims.items() if r.verdict is ClaimVerdict.reproduced
        ]


class StatusError(BadInput):
    """A status file that cannot be read (exit 2: `artbot validate` names the field)."""


def version_key(label: str) -> tuple[tuple[int, int, str], ...]:
    """Release labels in version order: ``0.5.9`` before ``0.5.21``, a word part after a number."""
    parts = label.replace("-", ".").split(".")
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)


def status_path(root: Path, item: int) -> Path:
    return root / STATUS_DIR / f"{item:02d}.json"


def load_status(root: Path, item: int) -> ItemStatus | None:
    path = status_path(root, item)
    if not path.is_file():
        return None
    try:
        return ItemStatus.model_validate(loads_limited(path.read_bytes().decode("utf-8")))
    except (ValueError, ValidationError) as exc:
        first = str(exc).splitlines()
        shown = " ".join(line.strip() for line in first[:3])
        raise StatusError(
            f"{path}: not a valid status record ({shown}); `artbot validate` lists each problem"
        ) from None


def release_points(root: Path) -> list[StatusPoint]:
    """Every release point recorded in ``root``'s findings/status/NN.json files, in file order
    (a file that cannot be read is a :class:`StatusError`)."""
    points: list[StatusPoint] = []
    for path in sorted((Path(root) / STATUS_DIR).glob("[0-9]*.json")):
        try:
            status = ItemStatus.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise StatusError(f"{path}: {exc}") from None
        points += status.releases()
    return points


def dump_status(status: ItemStatus) -> str:
    return json.dumps(status.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
