"""The audit commit's place among the releases, dated by its anchors: the record and its sentence.

The audited commit is in no release. ``artbot verify`` counts, per release, how many of the
audit's anchors (``Location.anchor``) sit at exactly the audit's lines, and records the counts
in ``findings/status/anchors.json``::

    {"commit": "e2a406a48", "anchors": 14,
     "releases": [{"version": "0.5.20", "at_lines": 6}, {"version": "0.5.21", "at_lines": 12}],
     "after": "0.5.20", "before": "0.5.21"}

The catalog loads it when present (:attr:`artbot.catalog.Catalog.audit_place`); an issue states
it once, and only from these figures. Without the file nothing is said.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

ANCHORS_FILE = "findings/status/anchors.json"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReleaseAnchors(_Record):
    version: str = Field(pattern=r"^[0-9][0-9A-Za-z.+!-]{0,39}$")
    at_lines: int = Field(ge=0, description="Anchors found at exactly the audit's lines")


class AuditPlace(_Record):
    commit: str = Field(pattern=r"^[0-9a-f]{7,40}$")
    anchors: int = Field(ge=1, description="How many of the audit's anchors were counted")
    releases: list[ReleaseAnchors] = Field(min_length=1)
    after: str | None = Field(default=None, description="The newest release before the commit")
    before: str | None = Field(default=None, description="The oldest release after it")

    def counts(self) -> dict[str, int]:
        return {r.version: r.at_lines for r in self.releases}


def place_sentence(place: AuditPlace | None) -> str | None:
    """E.g. "`e2a406a48` lies after 0.5.20 and before 0.5.21: 12 of 14 of the audit's anchors
    sit at their lines in 0.5.21, 6 in 0.5.20." None without a record, or for another commit."""
    if place is None:
        return None
    counts = place.counts()
    where = " and ".join(
        f"{word} {version}"
        for word, version in (("after", place.after), ("before", place.before))
        if version
    )
    head = f"`{place.commit}` lies {where}" if where else f"`{place.commit}` is in no release"
    order = [v for v in (place.before, place.after) if v in counts]
    order += [r.version for r in place.releases if r.version not in order]
    first, *rest = order
    figures = f"{counts[first]} of {place.anchors} of the audit's anchors sit at their lines in "
    figures += first + "".join(f", {counts[v]} in {v}" for v in rest)
    return f"{head}: {figures}."
