"""What artbot remembers between runs (``--cache``; by default ``ROOT/.artbot/cache.json`` for
the user's own records, else in the user's cache directory: :mod:`artbot.records.root`): saved
ETags with the JSON they stand for, the labels it made sure exist, and the logins it has
written as. A cache that cannot be read (corrupt, an old or a wrong shape) only costs full
reads."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..jsonlimits import loads_limited


@dataclass
class EtagCache:
    """What artbot remembers between runs: saved ETags with the JSON they stand for (keyed by
    request URL), and the labels it has made sure exist. Optional file backing."""

    path: Path | None = None
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    labels: set[str] = field(default_factory=set)

    @classmethod
    def load(cls, path: Path | None) -> EtagCache:
        if path is None or not path.is_file():
            return cls(path)
        try:
            data = loads_limited(path.read_bytes())
            entries = {
                str(k): v
                for k, v in dict(data["etags"]).items()
                if isinstance(v, dict) and isinstance(v.get("etag"), str) and "data" in v
            }
            labels = {str(x) for x in data["labels"]}
            return cls(path, entries, labels)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return cls(path)  # a corrupt or old cache only costs full reads

    def save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        data = {
            "etags": self.entries,
            "labels": sorted(self.labels),
        }
        tmp.write_text(json.dumps(data), encoding="utf-8")
        tmp.replace(self.path)
