"""Render findings into issue titles and bodies, and the tracking checklist, from Jinja templates.

Pure once built: a :class:`Renderer` compiles every template when it is built, everything else
it shows was read when the catalog loaded, so rendering opens no file and starts no process.
The templates decide what the output looks like; this module only builds their context.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from ..errors import BadInput
from ..records.catalog import Catalog, minimal_repro_path
from ..records.marker import (
    BODY_END,
    BODY_START,
    MARKER_PREFIX,
    IssueMarker,
    marker_lines,
    region_span,
)
from ..records.models import TITLE_LIMIT, Audit, Finding, Location
from ..repro.files import art_block_release
from ..status import ItemStatus
from .status_view import StatusView, code_span, history_link, one_line, status_view

# GitHub rejects an issue body longer than this (422 "body is too long").
GITHUB_BODY_LIMIT = 65_536


@dataclass(frozen=True)
class RenderedIssue:
    item: int
    title: str
    body: str
    labels: tuple[str, ...]
    marker: IssueMarker


# ART tags each release ``v`` + its version (``v0.5.23``): its release workflow
# (.github/workflows/release.yml, "Create git tag": ``git tag v${version}``) makes the tag the
# PyPI upload is built from. A release's lines link to that tag.
RELEASE_TAG = "v{version}"


def permalink(audit: Audit, location: Location) -> str:
    """A link to the cited lines where they are: ``#L299`` for one line, ``#L375-L385`` for a
    range, at the audit commit, or, for lines artbot located in a release (``located_in``), at
    that release's tag (never another version's lines)."""
    lines = (
        f"#L{location.start}"
        if location.start == location.end
        else f"#L{location.start}-L{location.end}"
    )
    ref = (
        RELEASE_TAG.format(version=location.located_in)
        if location.located_in is not None
        else audit.commit
    )
    return f"{audit.web_url.rstrip('/')}/{audit.repository}/blob/{ref}/{location.path}{lines}"


def summary_lines(result: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """(claim id, what the run found) for each ``claim <id>: ...`` line of a captured run,
    escaped for a markdown table cell. Notes stay in the linked script's output."""
    if not result:
        return []
    rows = []
    for line in str(result.get("stdout", "")).splitlines():
        if line.startswith("claim ") and ":" in line:
            cid, _, found = line[len("claim ") :].partition(":")
            rows.append((cid.strip().replace("|", "\\|"), found.strip().replace("|", "\\|")))
    return rows


@functools.lru_cache(maxsize=8)
def _compiled(texts: tuple[tuple[str, str], ...]) -> jinja2.Environment:
    """The templates ``texts`` (name, source), compiled once per process: a copy of the
    project elsewhere (a test's, a worktree's) with the same templates compiles nothing."""
    env = jinja2.Environment(
        loader=jinja2.DictLoader(dict(texts)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        auto_reload=False,  # compiled once: a render never looks at the files again
        cache_size=-1,
    )
    env.filters["permalink"] = lambda loc, audit: permalink(audit, loc)
    env.filters["code"] = lambda text: code_span(text, in_table=False)
    env.filters["short"] = lambda text, limit: one_line(text, limit)
    env.filters["cell"] = lambda text: " ".join(str(text).split()).replace("|", "\\|")
    try:
        for name, _ in texts:
            env.get_template(name)
    except jinja2.TemplateError as exc:
        raise BadInput(f"templates: {type(exc).__name__}: {exc}") from exc
    return env


@functools.lru_cache(maxsize=32)
def _texts(templates_dir: str) -> tuple[tuple[str, str], ...]:
    folder = Path(templates_dir)
    return tuple(
        (p.relative_to(folder).as_posix(), p.read_text(encoding="utf-8"))
        for p in sorted(folder.rglob("*.j2"))
    )


def environment(templates_dir: Path) -> jinja2.Environment:
    """The compiled templates of ``templates_dir``: its files read on first use in a
    process, and compiled on first sight of those texts."""
    return _compiled(_texts(str(Path(templates_dir).absolute())))


def render_template(env: jinja2.Environment | Path, name: str, **context: Any) -> str:
    """Template ``name`` of ``env`` (or of that templates folder) rendered; a template error is
    bad input, said in one line."""
    if not isinstance(env, jinja2.Environment):
        env = environment(env)
    try:
        return env.get_template(name).render(context)
    except jinja2.TemplateError as exc:
        raise BadInput(f"templates: {type(exc).__name__}: {exc}") from exc


def issue_labels(audit: Audit, finding: Finding) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*audit.labels, *finding.labels]))


class Renderer:
    """Renders one catalog's issues: built once per run (the templates compiled, from
    ``templates_dir``, default the catalog's ``templates/``), then pure."""

    def __init__(self, catalog: Catalog, templates_dir: Path | None = None):
        self.catalog = catalog
        self.env = environment(templates_dir or catalog.root / "templates")

    def issue(
        self,
        finding: Finding,
        *,
        tracking_issue: int | None = None,
        repro_result: Mapping[str, Any] | None = None,
        status: ItemStatus | None = None,
        commit: str | None = None,
        follows: int | None = None,
        issues: Mapping[int, int] | None = None,
    ) -> RenderedIssue:
        """Title and body of the dedicated issue for ``finding``; ``commit`` overrides the
        tool commit the links point at (tests); ``follows``, the issue a follow-up follows;
        ``issues`` (item -> number) links an item's filed follow-ups. Raises
        :class:`BadInput` when the body would exceed GitHub's limit, so nothing is sent."""
        catalog, audit = self.catalog, self.catalog.audit
        marker = IssueMarker(audit.commit, finding.item)
        history = history_link(audit.web_url, audit.repository, audit.source_root)
        view = status_view(finding, status, audit.web_url, history)
        regression = self._regression(finding, view, commit)
        repro = self._repro(finding, repro_result, commit)
        context = {
            "audit": audit,
            "finding": finding,
            # (place, its link, whether an earlier place has the same line to look for)
            "locations": [
                (
                    loc,
                    permalink(audit, loc),
                    loc.anchor in [x.anchor for x in finding.locations[:i]],
                )
                for i, loc in enumerate(finding.locations)
            ],
            "tracking_issue": audit.tracking(tracking_issue),
            "repro": repro,
            "source_file": catalog.files.get(finding.item, "findings/"),
            # Where the finding stands in ART (findings/status/NN.json); None when not recorded.
            "status": view,
            "follows": follows,
            # The item whose fix artbot was checking, and its issue when known.
            "checking": _checking(
                finding,
                follows,
                {f.item: f.issue for f in catalog.findings if f.issue} | {**(issues or {})},
            ),
            # artbot's own follow-ups to this audit item, each filed as its own issue.
            "follow_ups": [
                (f, (issues or {}).get(f.item))
                for f in catalog.findings
                if f.follows == finding.item
            ],
            "regression": regression,
            "versions": versions_line(
                catalog, finding, view, bool(repro["minimal_output"]) and not repro["art"]
            ),
            "marker": str(marker),
            "body_start": BODY_START,
            "body_end": BODY_END,
        }
        title = render_template(self.env, "issue_title.md.j2", **context).strip()
        body = render_template(self.env, "issue_body.md.j2", **context)
        where = catalog.files.get(finding.item, finding.repro)
        if len(body) > GITHUB_BODY_LIMIT:
            raise BodyTooLong(
                f"{where}: rendered body is {len(body):,} "
                f"characters; GitHub's limit is {GITHUB_BODY_LIMIT:,}"
            )
        if not title or "\n" in title or "\r" in title or len(title) > TITLE_LIMIT:
            raise BadInput(
                f"{where}: rendered title must be one line of 1-{TITLE_LIMIT} characters "
                f"(it has {len(title)})"
            )
        check_markers(body, marker, where)
        return RenderedIssue(finding.item, title, body, issue_labels(audit, finding), marker)

    def _regression(
        self, finding: Finding, view: StatusView | None, commit: str | None
    ) -> dict[str, Any] | None:
        """The item's regression test for ART's suite, if it has one: path, link, and what
        artbot's run of it on the newest release reported (repros/regression/outcomes.json)."""
        catalog = self.catalog
        path = catalog.regression.get(finding.item)
        if path is None:
            if not finding.no_regression_test:
                return None
            return dict.fromkeys(
                ("path", "name", "url", "source", "release", "outcome", "open"), None
            ) | {"missing": finding.no_regression_test}
        name = path.rsplit("/", 1)[-1]
        repository = catalog.audit.tool_repository or catalog.tool.repository
        sha = commit or catalog.tool.commit or "main"
        web = catalog.audit.web_url.rstrip("/")
        outcomes = catalog.regression_outcomes
        return {
            "missing": None,
            "path": path,
            "name": name,
            "url": f"{web}/{repository}/blob/{sha}/{path}" if repository else None,
            "open": not (view is not None and view.fixed_in),
            "strict": catalog.regression_strict.get(finding.item, True),
            "release": outcomes.get("release"),
            "outcome": (outcomes.get("outcomes") or {}).get(name),
        }

    def _repro(
        self, finding: Finding, result: Mapping[str, Any] | None, commit: str | None
    ) -> dict[str, Any]:
        audit, tool = self.catalog.audit, self.catalog.tool
        repository = audit.tool_repository or tool.repository
        sha = commit or tool.commit
        url = None
        if repository:
            url = f"{audit.web_url.rstrip('/')}/{repository}/blob/{sha or 'main'}/{finding.repro}"
        minimal_path = minimal_repro_path(finding.item)
        minimal_name = minimal_path.rsplit("/", 1)[-1]
        minimal = self.catalog.sources.get(minimal_path)
        usable = usable_result(result)
        outputs = self.catalog.minimal_outputs
        # A block that calls ART names its release; artbot's runs of it are under "art".
        art = art_block_release(minimal)
        art_runs = ((outputs.get("art") or {}).get("runs") or {}).get(minimal_name) or {}
        newest = max(art_runs, key=_version_key, default=None)
        return {
            "path": finding.repro,
            "command": f"python {finding.repro}",
            "url": url,
            "commit_note": None if sha or not url else "at the main branch: no commit was known",
            "minimal": minimal,
            "minimal_path": minimal_path,
            "minimal_name": minimal_name,
            "minimal_url": f"{audit.web_url.rstrip('/')}/{repository}/blob/{sha or 'main'}/"
            f"{minimal_path}"
            if repository
            else None,
            "minimal_output": _text_or_none(
                art_runs.get(art[0]) if art else (outputs.get("outputs") or {}).get(minimal_name)
            ),
            "minimal_torch": _text_or_none(
                (outputs.get("art") or {}).get("torch") if art else outputs.get("torch")
            ),
            # (release, install command) of a block that calls ART's own code, else None
            "art": art,
            "art_python": _text_or_none((outputs.get("art") or {}).get("python")),
            "newest": (newest, _text_or_none(art_runs[newest]))
            if art and newest and newest != art[0]
            else None,
            "result": usable,
            "claim_lines": summary_lines(usable),
        }


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def _checking(
    finding: Finding, follows: int | None, issues: Mapping[int, int] | None
) -> tuple[int, int | None] | None:
    if finding.follows is None:
        return None
    item = finding.found_checking or finding.follows
    return item, follows if item == finding.follows else (issues or {}).get(item)


def _text_or_none(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def dating_sentence(catalog: Catalog) -> str | None:
    """Where the audit commit lies among the releases, from the recorded anchor counts; None
    without a record (or one that counted no release), so nothing is said."""
    dating = catalog.dating
    if dating is None or not dating.releases or dating.audit != catalog.audit.commit:
        return None
    return dating.sentence()


def versions_line(
    catalog: Catalog, finding: Finding, view: StatusView | None, shows_minimal_output: bool = True
) -> str:
    """What the issue's figures were found on: the audit commit and where it lies among the
    releases (the anchors that place it are stated once, in the tracking issue), or the release
    a follow-up was found in; the torch the minimal repro ran on, when its output is the repro
    in view. The newest release checked is the status line's, and is not said twice."""
    audit = catalog.audit
    parts = []
    if finding.is_follow_up:
        parts.append(f"found in openpipe-art {finding.checked_release}")
    else:
        dating = catalog.dating
        placed = (
            f" ({dating.short()})"
            if dating is not None and dating.releases and dating.audit == audit.commit
            else ""
        )
        parts.append(f"audit at `{audit.commit}`{placed}")
    if view is not None and view.newest and view.fixed_in == view.newest:
        # "Fixed in X" names no newer release: X is the newest checked.
        parts.append(f"newest release checked: {view.newest}")
    torch = _text_or_none(catalog.minimal_outputs.get("torch"))
    if torch and shows_minimal_output:
        parts.append(f"torch {torch}")
    return "; ".join(parts) + "."


class BodyTooLong(BadInput):
    """A rendered body over GitHub's limit (exit 2; ``sync`` reports and skips that item)."""


def check_markers(body: str, marker: IssueMarker, where: str) -> None:
    """A rendered body holds exactly one owned region with its finding marker, and no copy
    of a region, finding or checklist marker (a repro script or its output could carry one).
    Other artbot markers the templates write (status) are allowed."""
    ok = (
        len(marker_lines(body, BODY_START)) == 1
        and len(marker_lines(body, BODY_END)) == 1
        and region_span(body) is not None
        and IssueMarker.find(body) == marker
        and body.count(BODY_START) == 1
        and body.count(BODY_END) == 1
        and body.count("<!-- artbot:finding") == 1
        and "<!-- artbot:checklist" not in body
    )
    if not ok:
        raise BadInput(
            f"{where}: rendered body must hold exactly one artbot region and marker; "
            f"some embedded text (a script, its output) contains {MARKER_PREFIX!r}"
        )


def usable_result(result: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A captured repro run is evidence only if it finished cleanly with a verdict."""
    if not result or result.get("status") != "ok":
        return None
    return result


def render_checklist(
    entries: Sequence[Any],
    audit: Audit,
    templates_dir: Path,
    panel: Any = None,
    dating: str | None = None,
) -> str:
    """The visible lines of the tracking issue's managed block, checklist and Requests;
    ``panel`` is the :class:`artbot.tracking.requests.Panel` of requests (None: every request
    offered, unticked), ``dating`` where the audit commit lies among the releases
    (:func:`dating_sentence`): said once, here, not in every issue.
    :func:`artbot.tracking.block.compose` adds the rest."""
    from ..tracking.requests import panel as requests_panel

    return render_template(
        templates_dir,
        "checklist.md.j2",
        entries=entries,
        audit_commit=audit.commit,
        panel=panel if panel is not None else requests_panel(entries, (), None),
        dating=dating,
    )


def render_status_comment(view: Any, issue_state: str, audit: Audit, templates_dir: Path) -> str:
    """The comment artbot posts once when an item's recorded status changes."""
    return render_template(
        templates_dir, "status_comment.md.j2", status=view, issue_state=issue_state, audit=audit
    )
