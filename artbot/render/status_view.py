"""What an issue says about where its finding stands, and how it is filed: pure.

:func:`status_view` turns a finding and its recorded :class:`~artbot.status.ItemStatus` into
the line and rows ``templates/partials/status_line.md.j2`` and ``status_table.md.j2`` render,
and the decision ``open`` acts on (the README's "Filing decisions": closed only when *every*
claim was checked at the newest release and is fixed from
:meth:`~artbot.status.ItemStatus.fixed_in` on; artbot never reports "fixed" for more than it
checked). Every string that ends up in a table cell is made one line without ``|``, so a
detail copied from a repro's output cannot break the table or inject markdown structure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from ..records.models import Claim, Finding
from ..status import (
    Change,
    ClaimResult,
    ClaimVerdict,
    ItemStatus,
    Method,
    SourceLine,
    StatusError,
    StatusPoint,
    Verdict,
)

Filing = Literal["open", "closed"]
_DETAIL_MAX = 80
_CELL_MAX = 480  # a cell's measured detail or reason: cut at a word, never inside one
_CLAIM_MAX = 240  # a claim's text in a table cell (the catalog's longest is 213)
_SENTENCE_MAX = 600  # a claim's text in running text (an open claim is an issue's Actual)
_METHOD_WORDS = {
    "ran": "running ART's own code",
    "read": "reading its source",
    "modelled": "artbot's model only",
}
_STATE_RE = re.compile(r"<!-- artbot:status item=(\d+) state=([A-Za-z0-9=,.+!-]+) -->")
# What a point's label (a version or a commit) and a claim id may be: they reach headings,
# hidden markers and the state token, so anything else is refused rather than escaped.
_LABEL_RE = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+!-]{0,39}")
_CLAIM_RE = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
FILED_CLOSED = "<!-- artbot:filed state=closed -->"


@dataclass(frozen=True)
class Column:
    """One checked point, as a table heading."""

    source: str  # audit | release | main
    label: str  # e2a406a48, 0.5.23, a main commit
    checked_on: str
    newest: bool = False

    @property
    def heading(self) -> str:
        """The column's heading: the release, or ART's main at a commit (the audit point,
        artbot's model of the audit commit, stays in the record)."""
        if self.source == "release":
            return f"openpipe-art {self.label}"
        return f"ART main `{self.label}`"


@dataclass(frozen=True)
class Row:
    claim: str  # the claim id
    text: str  # the audit's words, one line, table-safe
    sentence: str  # the audit's words, one line, for running text
    fixed_in: str | None  # the release from which this claim stays fixed
    fix: str = ""  # the Fixed-in cell: the release, its fixing lines and the upstream change
    # One per column, short: "reproduced (ran)"; a figure in the claim's words that the ran
    # check did not report is "modelled" in the same cell (see :func:`verdict_cell`).
    verdicts: tuple[str, ...] = ()


@dataclass(frozen=True)
class StatusView:
    """Everything the status partial, the title and the filing decision need."""

    item: int
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    newest: str | None  # the newest release checked; None when only the audit was checked
    verdict: Verdict  # at the newest release checked
    fixed_in: str | None  # every claim fixed from this release on (and all were checked)
    fixed: tuple[Row, ...]  # fixed at the newest release
    remaining: tuple[Row, ...]  # reproduced at the newest release
    unchecked: tuple[Row, ...]  # not checked at the newest release
    filing: Filing
    title: str | None  # the remaining symptom, when the issue is scoped to it
    marker: str  # hidden line recording the state this body states
    # How the newest release's checked claims were checked: (method, count), strongest first.
    methods: tuple[tuple[str, int], ...] = ()

    @property
    def checked(self) -> int:
        """Claims checked (fixed or reproduced) at the newest release."""
        return len(self.fixed) + len(self.remaining)

    @property
    def how(self) -> str:
        """E.g. "1 claim by running ART's own code, 2 by reading its source": how the newest
        release's checked claims were checked ("" when the record does not say)."""
        parts = [f"{n} by {_METHOD_WORDS[m]}" for m, n in self.methods]
        if parts:
            n = self.methods[0][1]
            parts[0] = parts[0].replace(" by ", " claim by " if n == 1 else " claims by ", 1)
        return ", ".join(parts)

    @property
    def state(self) -> str:
        return status_state(self)


def one_line(text: str, limit: int = _DETAIL_MAX) -> str:
    """One line, no raw HTML, at most ``limit`` characters; a longer text is cut at the last
    space that fits (a word, never part of one), then "…"."""
    flat = " ".join(text.split()).replace("<", "&lt;")
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    if flat[limit - 1] != " " and " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    while cut.endswith("&") or re.search(r"&[a-z]{0,2}$", cut):  # never half an "&lt;"
        cut = cut[: cut.rfind("&")]
    return cut.rstrip() + "…"


def code_span(text: str, in_table: bool = True) -> str:
    """``text`` as an inline code span: one line, a fence longer than any run of backticks in
    it; ``in_table``: every ``|`` escaped too (GFM splits a table's cells before code spans)."""
    # A source line quoting artbot's marker prefix must not read as a marker in the body: a
    # zero-width space splits it (a code span shows its text as is, so "&lt;" would show).
    # Line breaks become spaces; spaces inside a line are kept (a "look for" string is copied
    # byte for byte, and a code span shows them as they are).
    flat = re.sub(r"\s*[\r\n]+\s*", " ", text.strip()).replace("<!--", "<!-\u200b-")
    longest = max((len(m) for m in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or not flat else ""
    if not in_table:
        return f"{fence}{pad}{flat}{pad}{fence}"
    # In a code span a backslash is literal, but GFM's cell splitting still reads "\\|" as
    # an escaped backslash and a cell break: a backslash before a pipe gets a space.
    body = flat.replace("\\|", "\\ |").replace("|", "\\|")
    return f"{fence}{pad}{body}{pad}{fence}"


def source_ref(line: SourceLine) -> str:
    """`art/loss.py:387–395`, then the line to look for when recorded."""
    span = f"{line.line}" if line.end in (None, line.line) else f"{line.line}–{line.end}"
    ref = code_span(f"{line.path}:{span}")
    return f"{ref}, look for {code_span(line.look_for)}" if line.look_for.strip() else ref


_COMMIT_RE = re.compile(r"[0-9a-f]{7,40}")


def change_text(change: Change | None, web_url: str = "https://github.com") -> str:
    """The upstream change as a cell's words: a commit or pull request that GitHub reported,
    or "change not identified: why". A URL is linked only when it is on ``web_url``."""
    if change is None:
        return ""
    if not change.identified:
        why = cell_text(change.note, _CELL_MAX) if change.note.strip() else "no reason recorded"
        return f"change not identified: {why}"
    parts = []
    if change.commit and _COMMIT_RE.fullmatch(change.commit):
        parts.append(f"`{change.commit[:9]}`")
    if change.pull:
        parts.append(f"#{change.pull}")
    name = " ".join(parts) or "the change"
    base = web_url.rstrip("/") + "/"
    url = change.url or ""
    if url.startswith(base) and re.fullmatch(r"[\w./#:%?=&+-]+", url):
        name = f"[{name}]({url})"
    title = f" {cell_text(change.title, 120)}" if change.title.strip() else ""
    return f"change: {name}{title}"


_INERT = str.maketrans(
    {"\\": "\\\\", "|": "\\|", "[": "\\[", "]": "\\]", "<": "&lt;", ">": "&gt;", "@": "@\u2060"}
)


def cell_text(text: str, limit: int = _DETAIL_MAX) -> str:
    """:func:`one_line` as inert markdown: every ``|`` escaped so it cannot end a table cell,
    no link or image (``[``/``]`` escaped), no HTML (``<``/``>`` as entities) and no mention (a
    word joiner after ``@``), no bold from a dunder (``__init__`` would show as bold "init":
    its underscores escaped). Status text can come from a release's code or from GitHub."""
    return one_line(text, limit).translate(_INERT).replace("__", "\\_\\_")


# A number standing alone ("0.1 nats", "1e-8", "31 %"), not part of a name ("Qwen3", "4B"), a
# line ("L4857", "_impl.py:4857", "388–395"), a version ("0.5.23") or a path.
_NUMBER_RE = re.compile(r"(?<![\w.:/–-])\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w–]|\.\d)")


def figures(text: str) -> list[float]:
    """The numbers a text states (1e-8, 0.1, 31), as floats, in order."""
    return [float(m.group()) for m in _NUMBER_RE.finditer(text)]


# A measured figure: approximate ("about 0.1", "~0.1", "≈ 1e-5") or with a unit of what was
# measured ("0.1 nats", "1.8 %", "4 x"); a bare number is an input or a constant of the code.
_MEASURED_RE = re.compile(
    r"(?:(?:about|roughly|around|~|≈)\s*(?P<a>[\d.e+-]+))"
    r"|(?:(?P<b>(?<![\w.:/–-])\d+(?:\.\d+)?(?:e[-+]?\d+)?)\s*(?:nats?|%|x\b|×|times\b))"
)


def measured(text: str) -> list[float]:
    """The measured figures a text states (see :data:`_MEASURED_RE`), as floats."""
    out = []
    for m in _MEASURED_RE.finditer(text):
        found = figures(m.group("a") or m.group("b"))
        out.extend(found[:1])
    return out


def unproduced(claim: str, detail: str) -> list[float]:
    """The measured figures of ``claim`` that ``detail`` (what a check printed) does not
    state: the claim's own figures a run of ART's code did not produce."""
    said = figures(detail)
    return [x for x in measured(claim) if not any(abs(x - y) <= 1e-9 * abs(x) for y in said)]


def verdict_cell(result: ClaimResult | None, claim: str) -> str:
    """One claim at one point, short: the verdict and its method. "ran" says ART's own code
    produced it, so a figure in the claim that the run did not report is marked modelled."""
    if result is None or result.verdict is ClaimVerdict.not_checked:
        return "not checked"
    if result.method is None:
        return result.verdict.value
    cell = f"{result.verdict.value} ({result.method.value})"
    if result.method is Method.ran and unproduced(claim, result.detail):
        cell += "; the claim's figure: modelled, not from ART's code"
    return cell


def _fix_cell(
    release: str | None,
    result: ClaimResult | None,
    web_url: str,
    history: Callable[[str], str] | None = None,
) -> str:
    """The Fixed-in cell: the release, and at that release the fixing lines and the change.
    ``history(path)`` links a fixing file's commit history: where no change was identified,
    that is what a reader can follow instead."""
    if release is None:
        return "—"
    fix = result.fix if result is not None else None
    if fix is None:
        return release
    parts = [release, *(f"fix at {source_ref(line)}" for line in fix.lines)]
    if fix.change is not None and fix.change.identified:
        parts.append(change_text(fix.change, web_url))
    elif history is not None and fix.lines:
        paths = dict.fromkeys(line.path for line in fix.lines)
        parts.append("change: see " + ", ".join(map(history, paths)))
    else:
        # Say what was not asked too: a record without a change never looked one up.
        parts.append(change_text(fix.change, web_url) if fix.change else "change not looked up")
    return "<br>".join(parts)


def history_link(web_url: str, repository: str, source_root: str) -> Callable[[str], str]:
    """``art/x.py`` (a release's path) -> a link to the history of ``src/art/x.py`` on the
    main branch of ``repository``: the fixing commit is in it, after the audit commit."""
    base = f"{web_url.rstrip('/')}/{repository}/commits/main/"
    root = source_root.rstrip("/").rsplit("/", 1)[0]  # "src/art" -> "src"

    def link(path: str) -> str:
        full = f"{root}/{path}" if root and root != source_root.rstrip("/") else path
        return f"[`{full}`'s history]({base}{full})"

    return link


def _claims(finding: Finding, status: ItemStatus) -> list[Claim | str]:
    """The finding's claims in its order, then any claim only the status record names."""
    declared = {c.id for c in finding.claims}
    extra = [
        cid for p in status.points for cid in p.claims if cid not in declared
    ]  # a record older or newer than the YAML: shown by id, never dropped
    return [*finding.claims, *dict.fromkeys(extra)]


def _columns(status: ItemStatus) -> list[tuple[Column, StatusPoint]]:
    audit = next((p for p in status.points if p.source == "audit"), None)
    releases = status.releases()
    out: list[tuple[Column, StatusPoint]] = []
    if audit is not None:
        out.append((Column("audit", audit.label, audit.checked_on), audit))
    if releases:
        newest = releases[-1]
        column = Column("release", newest.label, newest.checked_on, True)
        out.append((column, newest))
    main = status.main
    if main is not None:
        out.append((Column("main", main.label, main.checked_on), main))
    return out


def status_view(
    finding: Finding,
    status: ItemStatus | None,
    web_url: str = "https://github.com",
    history: Callable[[str], str] | None = None,
) -> StatusView | None:
    """The status an issue states for ``finding``, or None when nothing was recorded.
    ``web_url``: the only site a recorded change's link may point at; ``history`` (see
    :func:`history_link`) links a fixing file's history where no change was identified."""
    if status is None:
        return None
    if status.item != finding.item:
        raise StatusError(f"status of item {status.item} given for item {finding.item}")
    for p in status.points:
        if not _LABEL_RE.fullmatch(p.label):
            raise StatusError(f"item {status.item}: {p.label!r} is not a version or commit")
        bad = [cid for cid in p.claims if not _CLAIM_RE.fullmatch(cid) or len(cid) > 60]
        if bad:
            raise StatusError(f"item {status.item}: {bad[0]!r} is not a claim id (kebab-case)")
    # A follow-up (origin: artbot) was found in a release: there is no audit text to model.
    columns = [c for c in _columns(status) if not (finding.is_follow_up and c[0].source == "audit")]
    releases = status.releases()
    newest_point = releases[-1] if releases else None
    rows = []
    by_label = {p.label: p for p in releases}
    for claim in _claims(finding, status):
        cid = claim if isinstance(claim, str) else claim.id
        text = cid if isinstance(claim, str) else claim.text
        fixed_in = status.fixed_in(cid) if newest_point else None
        at_fix = by_label[fixed_in].claims.get(cid) if fixed_in else None
        rows.append(
            Row(
                claim=cid,
                text=cell_text(text, _CLAIM_MAX),
                sentence=one_line(text, _SENTENCE_MAX),
                fixed_in=fixed_in,
                fix=_fix_cell(fixed_in, at_fix, web_url, history),
                verdicts=tuple(verdict_cell(point.claims.get(cid), text) for _, point in columns),
            )
        )

    def at_newest(row: Row) -> ClaimVerdict:
        if newest_point is None:
            return ClaimVerdict.not_checked
        result = newest_point.claims.get(row.claim)
        return result.verdict if result else ClaimVerdict.not_checked

    fixed = tuple(r for r in rows if at_newest(r) is ClaimVerdict.fixed)
    remaining = tuple(r for r in rows if at_newest(r) is ClaimVerdict.reproduced)
    unchecked = tuple(r for r in rows if at_newest(r) is ClaimVerdict.not_checked)
    all_fixed = bool(rows) and len(fixed) == len(rows) and all(r.fixed_in for r in rows)
    fixed_in = status.fixed_in() if all_fixed else None
    verdict = newest_point.verdict if newest_point else Verdict.not_checked
    title = None
    if fixed and fixed_in is None:
        open_rows = [*remaining, *unchecked]
        if len(open_rows) == 1 and isinstance(open_claim := _claim(finding, open_rows[0]), Claim):
            title = open_claim.symptom
    view = StatusView(
        item=finding.item,
        columns=tuple(c for c, _ in columns),
        rows=tuple(rows),
        newest=newest_point.label if newest_point else None,
        verdict=verdict,
        fixed_in=fixed_in,
        fixed=fixed,
        remaining=remaining,
        unchecked=unchecked,
        filing="closed" if fixed_in else "open",
        title=title,
        marker="",
        methods=_method_counts(newest_point, [*fixed, *remaining]),
    )
    return replace(view, marker=f"<!-- artbot:status item={view.item} state={view.state} -->")


def _method_counts(point: StatusPoint | None, rows: Sequence[Row]) -> tuple[tuple[str, int], ...]:
    if point is None:
        return ()
    used = [r.method for row in rows if (r := point.claims.get(row.claim)) and r.method]
    return tuple((m.value, used.count(m)) for m in Method if m in used)


def _claim(finding: Finding, row: Row) -> Claim | None:
    return next((c for c in finding.claims if c.id == row.claim), None)


def status_state(view: StatusView) -> str:
    """A short, stable token for what the issue states: changes exactly when a comment is due
    (a newer release that changes nothing is not a status change)."""
    fixed = ",".join(sorted(r.claim for r in view.fixed)) or "none"
    token = f"{view.verdict.value.replace(' ', '-')},fixed={fixed}"
    if view.fixed_in:
        token += f",in={view.fixed_in}"
    return token


def stated_status(body: str | None, item: int) -> str | None:
    """The status token an issue body (or comment) states for ``item``; the last one wins."""
    found = [m.group(2) for m in _STATE_RE.finditer(body or "") if int(m.group(1)) == item]
    return found[-1] if found else None


def stated_in_comments(bodies: Sequence[str], item: int) -> str | None:
    """The status the newest artbot status comment states, oldest comment first in ``bodies``."""
    states = [s for b in bodies if (s := stated_status(b, item)) is not None]
    return states[-1] if states else None
