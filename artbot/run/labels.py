"""Labels for ``open`` and ``sync``: created once, and given to the preset issues and the
tracking issue so that the one labelled list call sees all of them. Each step returns its
results (:mod:`artbot.run.results`)."""

from __future__ import annotations

from collections.abc import Sequence

from ..catalog import Catalog
from ..errors import RemoteError
from ..github.repo import Repo
from ..models import ObservedIssue
from .plan import LabelTracking, LinkPreset
from .results import Result


def ensure_labels(
    repo: Repo, observed: Sequence[ObservedIssue], labels: Sequence[str], catalog: Catalog
) -> list[Result]:
    """Create the labels the issues about to be filed use, and only those.

    Labels on our issues exist, and so do those an earlier run made sure of (remembered in the
    cache); only otherwise ask GitHub which exist.
    """
    known = {lbl for i in observed for lbl in i.labels} | repo.cache.labels
    wanted = [lbl for lbl in dict.fromkeys(labels) if lbl not in known]
    if not wanted:
        return []
    existing = repo.existing_labels()
    made = []
    for name in wanted:
        if name not in existing:
            style = catalog.audit.label_definitions.get(name)
            repo.create_label(
                name, style.color if style else None, style.description if style else None
            )
            made.append(Result.done(f"created label {name!r}", kind="CreateLabel"))
    repo.cache.labels |= set(wanted)
    return made


def label_issue(
    repo: Repo,
    observed: Sequence[ObservedIssue],
    action: LabelTracking | LinkPreset,
    catalog: Catalog,
) -> list[Result]:
    """Label the tracking issue or a preset issue; a failure is a result (and a warning),
    never the end of the run."""
    made: list[Result] = []
    try:
        if isinstance(action, LabelTracking):
            made = ensure_labels(repo, observed, action.labels, catalog)
        repo.add_labels(action.issue, list(action.labels))
    except RemoteError as exc:
        line = (
            f"could not label tracking issue #{action.issue}: {exc}"
            if isinstance(action, LabelTracking)
            else f"item {action.item}: could not label #{action.issue}: {exc}"
        )
        return [*made, Result.failed(line, action)]
    return [*made, Result.done(f"labelled #{action.issue} ({', '.join(action.labels)})", action)]
