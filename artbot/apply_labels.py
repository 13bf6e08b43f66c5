"""Labels for ``open`` and ``sync``: created once, and given to the preset issues and the
tracking issue so that the one labelled list call sees all of them."""

from __future__ import annotations

from collections.abc import Callable

from .catalog import Catalog
from .errors import RemoteError
from .models import ObservedIssue
from .plan import LabelTracking, LinkPreset
from .repo import Repo

Log = Callable[[str], None]


def ensure_labels(
    repo: Repo, observed: list[ObservedIssue], labels: list[str], catalog: Catalog, log: Log
) -> None:
    """Create the labels the issues about to be filed use, and only those.

    Labels on our issues exist, and so do those an earlier run made sure of (remembered in the
    cache); only otherwise ask GitHub which exist.
    """
    known = {lbl for i in observed for lbl in i.labels} | repo.cache.labels
    wanted = [lbl for lbl in dict.fromkeys(labels) if lbl not in known]
    if not wanted:
        return
    existing = repo.existing_labels()
    for name in wanted:
        if name not in existing:
            style = catalog.audit.label_definitions.get(name)
            repo.create_label(
                name, style.color if style else None, style.description if style else None
            )
            log(f"created label {name!r}")
    repo.cache.labels |= set(wanted)


def label_issue(
    repo: Repo,
    observed: list[ObservedIssue],
    action: LabelTracking | LinkPreset,
    catalog: Catalog,
    log: Log,
    done: list[str],
    warnings: list[str],
) -> None:
    """Label the tracking issue or a preset issue; a failure is a warning, never the end."""
    try:
        if isinstance(action, LabelTracking):
            ensure_labels(repo, observed, list(action.labels), catalog, log)
        repo.add_labels(action.issue, list(action.labels))
        done.append(f"labelled #{action.issue} ({', '.join(action.labels)})")
    except RemoteError as exc:
        if isinstance(action, LabelTracking):
            warnings.append(f"could not label tracking issue #{action.issue}: {exc}")
        else:
            warnings.append(f"item {action.item}: could not label #{action.issue}: {exc}")
