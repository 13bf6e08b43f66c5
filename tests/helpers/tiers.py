"""The suite's tiers, and the slice of the slow ones that ``make test`` runs (``--slice``).

``make test-all`` (CI's ``.ci/run``) runs every test. ``make test``, the README's, run before
pushing, runs the fast tier, the end-to-end one, and of each slow test only its representative
cases: a test parametrized by ``version`` on the newest release; one by ``kernel`` on the
default kernel; the adversarial controls, one fake and one real fix per item, each on the
newest release it names; and none marked ``full`` (a comparison of every kernel, the
further fakes of an item). That is the one rule (:func:`in_slice` and the marker); tests/project/
test_suite_rules.py checks that every checked item keeps a fake and a real fix in it.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from tests.helpers.wheels import RELEASES

NEWEST = RELEASES[-1]
KERNEL = "default"
SLOW = ("repro", "network")  # the slow tiers (markers); e2e runs whole in make test
ADVERSARIAL = Path(__file__).resolve().parents[2] / "repros" / "controls" / "adversarial"
_CONTROL = re.compile(r"item(\d+)_(fake|real)_")


def _release_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


@cache
def adversarial_slice() -> dict[tuple[int, str], tuple[str, str]]:
    """(item, "fake" or "real") -> (the control's file stem, the release it runs on): the
    first control of each kind per item, on the newest release it names."""
    from tests.helpers.controls import load_adversarial

    chosen: dict[tuple[int, str], tuple[str, str]] = {}
    for path in sorted(ADVERSARIAL.glob("item*.toml")):
        match = _CONTROL.match(path.name)
        if match and (key := (int(match[1]), match[2])) not in chosen:
            releases = load_adversarial(path).releases
            chosen[key] = (path.stem, max(releases, key=_release_key))
    return chosen


def in_slice(params: dict[str, Any]) -> bool:
    """Whether a slow test's case, given by its parameters, is in ``make test``'s slice."""
    path = params.get("path")
    if isinstance(path, Path) and path.parent == ADVERSARIAL:
        return (path.stem, params.get("version")) in set(adversarial_slice().values())
    if params.get("version", NEWEST) != NEWEST:
        return False
    return params.get("kernel", KERNEL) == KERNEL
