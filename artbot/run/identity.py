"""Who artbot writes as: configured, never inferred (:mod:`artbot.tracking.ownership`).

``--author`` / ``$ARTBOT_AUTHORS`` when given, else ``login`` in ``findings/audit.yaml``
(default ``github-actions[bot]``, an Actions workflow's own token). The tracking issue's
record adds the logins configured on earlier runs (:mod:`artbot.tracking.record`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..records.models import Audit


@dataclass(frozen=True)
class Identity:
    """The logins configured for this run (empty: the audit's ``login``)."""

    authors: tuple[str, ...] = ()

    def configured(self, audit: Audit) -> tuple[str, ...]:
        return self.authors or (audit.login,)
