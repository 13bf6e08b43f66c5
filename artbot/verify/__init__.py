"""Check the findings against real ART code: a git checkout, an unpacked wheel, or a release.

- :mod:`.tree`: where ART's source is (:class:`ArtTree`, :func:`open_tree`).
- :mod:`.anchors`: does every cited range still hold its anchor line?
- :mod:`.isolation`: ART's modules imported one file at a time (:class:`ArtModules`).
- :mod:`.code`: each finding's own ``check_art(art)`` (defined beside its repro) run against
  ART's code, claim by claim (:func:`verify_code`); generic, it knows no finding.
- :mod:`.apart`: the code checks run in a child process that holds no token, confined by
  :mod:`.confine` (its own namespaces; a root holding only what the check needs, read-only,
  and its scratch folder; no capabilities), capped by :mod:`.limits`; its text through
  :mod:`.sanitize`.
- :mod:`.wheel`: a wheel checked entry by entry before it is unpacked.
- :mod:`.gitread`: a checkout's objects read by hash, git running on none of its config.
- :mod:`.release`: which release is the newest (pip is asked); the wheel cache, filled by pip;
  each wheel pinned from outside the cache and unpacked afresh.
- :mod:`.record`: results turned into ``findings/status/NN.json`` (:mod:`artbot.status`).
- :mod:`.notes`: checklist notes and issue comments from results; pure.
- :mod:`.cli`: the ``artbot verify`` commands.

Names are re-exported lazily, so importing this package (as ``artbot --help`` does, to register
the commands) loads none of them.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "tree": ("ArtTree", "open_tree", "DISTRIBUTION", "WHEEL_PREFIX"),
    "anchors": (
        "AnchorResult", "AnchorStatus", "anchor_table", "anchors_json", "check_location",
        "verify_anchors",
    ),
    "isolation": ("ArtModules", "NotLoadedError", "STAND_INS", "Unloaded"),
    "code": (
        "CodeResult", "CodeStatus", "CheckContractError", "checkable", "claim_results",
        "code_json", "code_table", "load_repro", "run_check", "verify_code",
    ),
    "apart": ("CannotConfine", "child_env", "verify_code_apart"),
    "release": (
        "CACHE_ENV", "WHEEL_PYTHON", "Pin", "cache_dir", "fetch_release", "index_pin",
        "newest_release", "recorded_pin", "release_tree", "resolve", "unpack",
    ),
    "record": ("audit_point", "recorded_check", "release_point", "record_status"),
    "notes": ("comments_to_post", "verification_comment", "verification_notes"),
}  # fmt: skip
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
_ELSEWHERE = {
    "ReleaseUnavailable": "artbot.errors",
    "VerifyMarker": "artbot.records.marker",
}

__all__ = sorted([*_WHERE, *_ELSEWHERE])


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    if name in _ELSEWHERE:
        return getattr(importlib.import_module(_ELSEWHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
