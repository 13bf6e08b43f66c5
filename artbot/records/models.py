"""pydantic records for the audit and its findings.

One YAML file in ``findings/`` is one :class:`Finding`; ``findings/audit.yaml`` is the
:class:`Audit`. Models are strict (``extra="forbid"``) so a typo in a key is an error,
not a silently ignored field. Cross-file checks (duplicate items, repro paths on disk,
locations under the source root) live in :mod:`artbot.records.catalog`.

What GitHub holds (an issue as it reports it) is in :mod:`artbot.records.observed`.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from .marker import MARKER_PREFIX

# A GitHub login: up to 39 letters, digits and hyphens, not starting with a hyphen; an App's bot
# account is its slug followed by "[bot]". The one grammar (inputs, the record, the requests).
LOGIN = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?"
# The login of issues filed with an Actions run's GITHUB_TOKEN: the login artbot is configured
# with unless the audit or --author says otherwise (artbot.tracking.ownership).
ACTIONS_BOT = "github-actions[bot]"

NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
RepoPath = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, pattern=r"^[^/].*")
]
# GitHub's limit for an issue title.
TITLE_LIMIT = 256
IssueTitle = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=TITLE_LIMIT),
]


# A repository placeholder ("OWNER/artbot") would render as a link that leads nowhere.
PLACEHOLDER = "OWNER/"


def _no_marker(value: Any) -> Any:
    """Reject record text that could be read as one of artbot's hidden markers, and the
    ``OWNER/`` placeholder of a repository that was never filled in."""
    if isinstance(value, str):
        if MARKER_PREFIX in value:
            raise ValueError(
                f"must not contain {MARKER_PREFIX!r}: artbot's markers are reserved "
                "(it would confuse which part of an issue artbot owns)"
            )
        if PLACEHOLDER in value:
            raise ValueError(
                f"must not contain the placeholder {PLACEHOLDER!r}: name the real repository "
                "(or leave it out: see --tool-repository)"
            )
    elif isinstance(value, (list, tuple)):
        for part in value:
            _no_marker(part)
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="after")
    @classmethod
    def _text_holds_no_marker(cls, value: Any) -> Any:
        return _no_marker(value)


class ConfidenceLevel(StrEnum):
    confirmed = "confirmed"
    plausible = "plausible"
    speculative = "speculative"


class Basis(StrEnum):
    """How the confidence was earned."""

    measurement = "measurement"
    repro = "repro"
    logic = "logic"
    reading = "reading"


class Confidence(_Strict):
    level: ConfidenceLevel
    basis: list[Basis] = Field(min_length=1)
    note: NonEmpty

    @field_validator("note")
    @classmethod
    def _note_says_more(cls, note: str) -> str:
        words = re.sub(r"[^a-z ]", " ", note.lower()).split()
        filler = {*ConfidenceLevel, *Basis, "by", "and", "from"}
        if not words or set(words) <= filler:
            raise ValueError(
                f"confidence note {note!r} only restates level and basis; say what was checked"
            )
        return note


class Location(_Strict):
    """A line range in the audited repository, at the audit commit."""

    path: RepoPath = Field(description="Path in the audited repository, e.g. src/art/loss.py")
    lines: tuple[int, int] = Field(description="First and last line, inclusive (1-based)")
    anchor: NonEmpty | None = Field(
        default=None,
        description="A short characteristic source line that appears inside the range.",
    )
    note: NonEmpty | None = Field(
        default=None, description="What this location is, if not obvious."
    )
    located_in: NonEmpty | None = Field(
        default=None,
        description="Where the audit links no lines: the release in which artbot located this "
        "range. Such lines are artbot's, not the audit's, so they do not date the audit commit.",
    )

    @field_validator("lines")
    @classmethod
    def _range_is_sane(cls, lines: tuple[int, int]) -> tuple[int, int]:
        start, end = lines
        if start < 1 or end < 1:
            raise ValueError(f"line numbers must be positive, got {start}-{end}")
        if end < start:
            raise ValueError(f"line range is inverted: {start}-{end}")
        return lines

    @property
    def start(self) -> int:
        return self.lines[0]

    @property
    def end(self) -> int:
        return self.lines[1]


class Evidence(_Strict):
    """One measured figure, as the audit reported it."""

    quantity: NonEmpty
    value: NonEmpty = Field(description="The figure with its unit, e.g. '0.075 nats'.")
    setting: NonEmpty | None = Field(
        default=None, description="Model, data or shape it was measured on."
    )
    artbot: NonEmpty | None = Field(
        default=None,
        description="What artbot's reproduction measured for the same quantity, in its own "
        "setting (stated in reproduction_notes): shown beside the audit's figure.",
    )


class Fix(_Strict):
    kind: Annotated[str, StringConstraints(pattern=r"^(fix|check|action)$")] = Field(
        description="fix: a code change; check: an experiment that settles it; action: what to do."
    )
    text: NonEmpty


Title = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=90)]
# The audit's items are numbered 1-99; artbot's follow-up n (1-99) of item N is 100 * N + n, so
# follow-up 801 is the first that artbot found while checking item 8's fix: stable, and never
# among the audit's numbers.
MAX_AUDIT_ITEM = 99


def follow_up_of(item: int) -> int | None:
    """The audit item a follow-up number belongs to (801 -> 8), None for an audit number."""
    parent, n = divmod(item, 100)
    return parent if parent >= 1 and n >= 1 else None


ClaimId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", max_length=60)]


class Contract(_Strict):
    """What a claim's fix must satisfy, stated once (issue #51): the check and the regression
    test state its domain, oracle and tolerance verbatim (``tests/records/test_contracts.py``);
    the Expected says it in a maintainer's words. ``by: artbot`` (with ``why``) where the audit
    did not decide it; ``test_covers`` where the regression test covers less ("nothing": it does
    not test the claim)."""

    by: Literal["audit", "artbot"] = Field(description="Who decided what correct code does.")
    why: NonEmpty | None = Field(default=None, description="by: artbot only: why artbot chose it.")
    must: NonEmpty = Field(description="What must hold, in a maintainer's words.")
    domain: NonEmpty = Field(description="The inputs it must hold over (the check's words).")
    oracle: NonEmpty = Field(description="What ART's result is compared with.")
    tolerance: NonEmpty = Field(description="How close it must be.")
    test_covers: NonEmpty | None = Field(default=None, description="Where the test covers less.")

    @model_validator(mode="after")
    def _artbot_says_why(self) -> Contract:
        if (self.by == "artbot") != (self.why is not None):
            raise ValueError("why is required for by: artbot, and only there")
        return self

    @property
    def untested(self) -> bool:
        return self.test_covers == "nothing"

    def terms(self, *, for_test: bool = False) -> dict[str, str]:
        """The phrases the check (or, ``for_test``, the regression test) states verbatim."""
        if for_test and self.untested:
            return {}
        domain = self.test_covers if for_test and self.test_covers else self.domain
        return {"domain": domain, "oracle": self.oracle, "tolerance": self.tolerance}


class Claim(_Strict):
    """One checkable statement of a finding. ART fixes claims one at a time, so each is
    reproduced, fixed or not checked on its own (see :mod:`artbot.status`)."""

    id: ClaimId = Field(description="kebab-case slug, unique within the finding")
    text: NonEmpty = Field(description="The claim in the audit's words, one sentence.")
    symptom: Title = Field(
        description="The symptom as an issue title, when this claim is what remains."
    )
    contract: Contract | None = Field(
        default=None, description="What a fix must satisfy: see Contract."
    )


class Unconfirmed(_Strict):
    """A fact no one confirmed (#51): a record stating it (``pattern``) says it is unconfirmed."""

    fact: NonEmpty
    pattern: NonEmpty

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            return re.compile(pattern).pattern
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None


class Finding(_Strict):
    """One audit item: what is wrong, where, how we know, and what correct code would do."""

    item: int = Field(ge=1, description="Item number in the tracking issue.")
    title: IssueTitle = Field(description="One line of at most 256 characters.")
    summary: NonEmpty = Field(description="One paragraph a reviewer reads first.")
    affects: list[NonEmpty] = Field(min_length=1, description="Backends or code paths affected.")
    locations: list[Location] = Field(min_length=1)
    what: NonEmpty = Field(description="What happens.")
    why: NonEmpty | None = Field(
        default=None, description="Why it matters, where the audit says; omit where it does not."
    )
    evidence: list[Evidence] = Field(
        default_factory=list,
        description="The audit's measured figures; empty where it measured none.",
    )
    effect: NonEmpty
    expected: NonEmpty = Field(description="What correct code would do, stated testably.")
    additions: list[Literal["why", "expected", "effect", "impact"]] = Field(
        default_factory=list,
        description="Fields written by artbot rather than taken from the audit; the issue marks "
        "each as artbot's addition.",
    )
    confidence: Confidence
    unconfirmed: list[Unconfirmed] = Field(default_factory=list, description="See Unconfirmed.")
    impact: NonEmpty
    fix: Fix
    claims: list[Claim] = Field(
        default_factory=list,
        description="The finding's checkable claims, each with its own verdict.",
    )
    repro: RepoPath = Field(
        description="Path of the reproduction script, e.g. repros/item07_tis.py"
    )
    reproduction_notes: list[NonEmpty] = Field(
        default_factory=list,
        description="Where the reproduction measured something beyond, or different from, the "
        "audit's figures, and why (synthetic data, another model). Never the audit's own words.",
    )
    disagreement: NonEmpty | None = Field(
        default=None,
        description="Where artbot's own measurement contradicts the audit's text: artbot's words, "
        "shown first in the issue, before the audit's summary.",
    )
    labels: list[NonEmpty] = Field(default_factory=list, description="Labels beyond the audit's.")
    no_regression_test: NonEmpty | None = Field(
        default=None,
        description="Why no regression test for ART's suite ships (its code does not run on a "
        "CPU, or the expected behaviour is an open question): the issue says so.",
    )
    issue: int | None = Field(
        default=None, ge=1, description="Existing issue number; artbot never files such an item."
    )
    origin: Literal["audit", "artbot"] = Field(
        default="audit",
        description="audit: one of the audit's items, in its words. artbot: a follow-up artbot "
        "found itself while checking the fix of the item in `follows`; its text is artbot's.",
    )
    follows: int | None = Field(
        default=None,
        ge=1,
        le=MAX_AUDIT_ITEM,
        description="For a follow-up: the audit item whose fix artbot was checking.",
    )
    checked_release: NonEmpty | None = Field(
        default=None,
        description="For a follow-up: the openpipe-art release in which artbot found it.",
    )
    found_checking: int | None = Field(
        default=None,
        ge=1,
        le=MAX_AUDIT_ITEM,
        description="For a follow-up found while checking another item's fix than the one it "
        "follows (401: item 4 on the Unsloth backend, found checking #1109, item 2): that item.",
    )

    @model_validator(mode="after")
    def _follow_up_is_numbered_after_its_item(self) -> Finding:
        if self.origin == "audit":
            if (self.follows, self.checked_release, self.found_checking) != (None, None, None):
                raise ValueError(
                    "follows, checked_release and found_checking are for origin: artbot only"
                )
            if self.item > MAX_AUDIT_ITEM:
                raise ValueError(
                    f"an audit item is numbered 1-{MAX_AUDIT_ITEM}; a larger number is a "
                    "follow-up's (origin: artbot)"
                )
            return self
        if self.follows is None or self.checked_release is None:
            raise ValueError("a follow-up (origin: artbot) names follows and checked_release")
        if not follow_up_of(self.item) == self.follows:
            raise ValueError(
                f"a follow-up of item {self.follows} is numbered {self.follows * 100 + 1}-"
                f"{self.follows * 100 + 99} (100 x the item + its own number), not {self.item}"
            )
        if self.issue is not None:
            raise ValueError("a follow-up is artbot's own: it has no preset issue")
        return self

    @property
    def is_follow_up(self) -> bool:
        return self.origin == "artbot"

    @field_validator("title", mode="before")
    @classmethod
    def _title_is_one_line(cls, value: Any) -> Any:
        if isinstance(value, str) and ("\n" in value.strip() or "\r" in value.strip()):
            raise ValueError("must be one line (GitHub titles hold no line breaks)")
        return value


class LabelDefinition(_Strict):
    """How a label looks on GitHub when artbot has to create it."""

    color: Annotated[str, StringConstraints(pattern=r"^[0-9a-fA-F]{6}$")] = Field(
        description="Six hex digits, without '#'."
    )
    description: Annotated[str, StringConstraints(max_length=100)] = Field(
        description="GitHub allows at most 100 characters."
    )


class Audit(_Strict):
    """The audit every finding belongs to."""

    repository: Annotated[str, StringConstraints(pattern=r"^[\w.-]+/[\w.-]+$")]
    commit: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{7,40}$")]
    source_root: RepoPath = Field(description="Where the audited code lives, e.g. src/art/")
    tracking_issue: int | None = Field(default=None, ge=1)
    tracking_label: NonEmpty | None = Field(
        default=None,
        description="A label of the tracking issue's own: with the audit's labels on it, the "
        "tracking issue comes back in the one labelled list, so a sync with nothing to do is "
        "a single conditional request. sync adds the labels once.",
    )
    labels: list[NonEmpty] = Field(default_factory=list)
    label_definitions: dict[str, LabelDefinition] = Field(
        default_factory=dict,
        description="Colour and description of every label the audit or a finding uses.",
    )
    web_url: NonEmpty = "https://github.com"
    login: Annotated[str, StringConstraints(pattern=rf"^{LOGIN}$")] = Field(
        default=ACTIONS_BOT,
        description="The login artbot writes as (its token's): an issue carrying artbot's marker "
        "is artbot's only when this login wrote it. --author / $ARTBOT_AUTHORS overrides it; "
        "the default is the login of an Actions workflow's own GITHUB_TOKEN.",
    )
    close_when_fixed: bool = Field(
        default=False,
        description="sync closes an open issue artbot filed, as completed with one comment, "
        "when a newly checked release fixes every claim; off by default (see the README).",
    )

    @field_validator("label_definitions")
    @classmethod
    def _defines_its_own_labels(cls, value: dict[str, Any], info: Any) -> dict[str, Any]:
        missing = [lbl for lbl in info.data.get("labels", []) if value and lbl not in value]
        if missing:
            raise ValueError(f"no definition for the audit's label(s) {', '.join(missing)}")
        return value

    tool_repository: Annotated[str, StringConstraints(pattern=r"^[\w.-]+/[\w.-]+$")] | None = Field(
        default=None,
        description="Where artbot itself is hosted (owner/name); full repro scripts are linked "
        "there. Without it: $GITHUB_REPOSITORY in Actions, else the git remote (toolsource.py).",
    )

    def tracking(self, flag: int | None) -> int | None:
        """The tracking issue a run uses, decided here only: ``--tracking-issue`` (or
        ``$ARTBOT_TRACKING_ISSUE``, which click reads into it), else ``tracking_issue``."""
        return flag if flag is not None else self.tracking_issue
