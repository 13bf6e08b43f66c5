"""Where the audit commit lies among the releases, dated by its own anchors; pure data.

The audit cites ART at a commit that is in no release. ``artbot verify --release X --record``
counts, for release X, how many of the audit's anchors sit at exactly the audit's lines (status
``ok`` of :mod:`artbot.verify.anchors`; locations without an anchor are not counted) and
records them in ``findings/status/anchors.json``. From those counts :func:`AnchorDating.place`
says, once, between which releases the audit's code lies:

- after release R when some anchor is at its line in a later release and not in R (code the
  audit cites that R does not have yet);
- before release S when some anchor at its line in an earlier release is not at its line in S
  (code the audit cites that S has changed).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import StatusError, version_key

DATING_FILE = Path("findings") / "status" / "anchors.json"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReleaseAnchors(_Strict):
    """The audit's anchors against one release."""

    label: str = Field(description="The release, e.g. 0.5.21")
    checked_on: str
    at_lines: list[str] = Field(
        description="The anchors at exactly the audit's lines, as item:path:start-end"
    )
    moved: int = Field(ge=0, description="Anchors found elsewhere in the file")
    missing: int = Field(ge=0, description="Anchors (or files) not found")


class AnchorDating(_Strict):
    audit: str = Field(description="The audit commit")
    anchors: int = Field(ge=0, description="Locations with an anchor (M)")
    releases: list[ReleaseAnchors] = Field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Release -> how many anchors sit at the audit's lines there."""
        return {r.label: len(r.at_lines) for r in self.releases}

    def place(self) -> tuple[str | None, str | None]:
        """(after, before): the releases the audit's code lies between, from the anchors; None
        where the anchors do not say (no release checked on that side shows it)."""
        ordered = sorted(self.releases, key=lambda r: version_key(r.label))
        at = [set(r.at_lines) for r in ordered]
        after = None
        for i, release in enumerate(ordered):
            later = set().union(*at[i + 1 :]) if i + 1 < len(at) else set()
            if later - at[i]:
                after = release.label
        start = next((i for i, r in enumerate(ordered) if r.label == after), -1)
        before = None
        for j in range(start + 1, len(ordered)):
            earlier = set().union(*at[:j]) if j else set()
            if earlier - at[j]:
                before = ordered[j].label
                break
        return after, before

    def sentence(self) -> str:
        """The audit's place with the anchors that decide it, e.g. ``e2a406a48 lies after 0.5.20
        and before 0.5.21: 6 of 15 anchors sit at their lines in 0.5.20 and 3 in 0.5.21;
        2 only in 0.5.21 (`megatron/train.py` L283, ...), 5 only in 0.5.20``."""
        after, before = self.place()
        counts = self.counts()
        if after and before:
            where = f"lies after {after} and before {before}"
        elif after:
            where = f"lies after {after}"
        elif before:
            where = f"lies before {before}"
        else:
            where = "is not placed by its anchors"
        named = [x for x in (after, before) if x] or list(counts)
        first, *rest = named
        parts = f"{counts[first]} of {self.anchors} anchors sit at their lines in {first}"
        parts += "".join(f" and {counts[x]} in {x}" for x in rest)
        if after and before:
            by = {r.label: set(r.at_lines) for r in self.releases}
            later, earlier = sorted(by[before] - by[after]), sorted(by[after] - by[before])
            parts += f"; {_listed(later, before)}, {_listed(earlier, after)}"
        return f"{self.audit} {where}: {parts}"

    def short(self) -> str:
        """The audit's place in a few words, for an issue's Versions line (the anchors that
        decide it are in :meth:`sentence`, which the tracking issue states once), e.g. "after
        0.5.20, before 0.5.21"."""
        after, before = self.place()
        if after and before:
            return f"after {after}, before {before}"
        if after:
            return f"after {after}"
        if before:
            return f"before {before}"
        return "not placed among the releases by its anchors"

    def with_release(self, release: ReleaseAnchors) -> AnchorDating:
        """This record with ``release`` added or replaced, releases in version order."""
        kept = [r for r in self.releases if r.label != release.label] + [release]
        kept.sort(key=lambda r: version_key(r.label))
        return self.model_copy(update={"releases": kept})


def load_dating(root: Path) -> AnchorDating | None:
    path = root / DATING_FILE
    if not path.is_file():
        return None
    try:
        return AnchorDating.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, ValidationError) as exc:
        raise StatusError(f"{path}: not a valid anchors record: {exc}") from exc


def dump_dating(dating: AnchorDating) -> str:
    return json.dumps(dating.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def _listed(anchors: list[str], release: str, shown: int = 3) -> str:
    """``2 only in 0.5.21 (`megatron/train.py` L283, ...)``: how many, and the first few."""
    if not anchors:
        return f"none only in {release}"
    names = []
    for anchor in anchors[:shown]:
        if anchor.count(":") < 2:  # not item:path:start-end; shown as recorded
            names.append(f"`{anchor}`")
            continue
        _item, path, lines = anchor.split(":", 2)
        start, _, end = lines.partition("-")
        span = f"L{start}" if end in ("", start) else f"L{start}-L{end}"
        names.append(f"`{path.removeprefix('src/art/')}` {span}")
    more = ", ..." if len(anchors) > shown else ""
    return f"{len(anchors)} only in {release} ({', '.join(names)}{more})"
