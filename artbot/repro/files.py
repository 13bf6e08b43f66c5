"""The files beside a finding's record that rendering reads: its regression test for ART's
suite (``repros/regression/test_itemNN_*.py``), what those tests reported on the newest release
(``repros/regression/outcomes.json``) and what each minimal repro prints
(``repros/minimal/outputs.json``). The captures are written by the tests that prove them
(tests/repro/test_export.py, tests/repros/test_minimal.py), never by hand."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..jsonlimits import loads_limited

REGRESSION_DIR = "repros/regression"
REGRESSION_OUTCOMES = f"{REGRESSION_DIR}/outcomes.json"
MINIMAL_OUTPUTS = "repros/minimal/outputs.json"
# The first line of a minimal repro that calls ART's own code: the environment a maintainer
# makes to run it, which is also the release artbot runs it on (tests/repros/test_art_blocks.py).
ART_BLOCK_HEAD = re.compile(
    r'\A# Python 3\.12, CPU: (?P<install>pip install "?openpipe-art(?:\[\w+\])?'
    r'==(?P<release>\d+(?:\.\d+)+)"?(?: torch)?)\n'
)


def art_block_release(source: str | None) -> tuple[str, str] | None:
    """(release, install command) of a minimal repro that calls ART's own code, from its first
    line (``# Python 3.12, CPU: pip install openpipe-art==0.5.23 torch``); None for a script
    that models ART's lines with torch alone."""
    match = ART_BLOCK_HEAD.match(source or "")
    return (match["release"], match["install"]) if match else None


def json_or_empty(path: Path) -> dict[str, Any]:
    """A captured-output file (repros/regression/outcomes.json, repros/minimal/outputs.json),
    or {} when absent or unreadable: the issue then says nothing of it."""
    try:
        data = loads_limited(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def regression_strictness(root: Path) -> dict[int, bool]:
    """item -> whether its regression test's xfail is strict (False where the file marks it
    ``strict=False``: the audit decides no fix, so a fix is reported as an XPASS only)."""
    out: dict[int, bool] = {}
    for item, rel in regression_tests_by_item(root).items():
        try:
            text = (root / rel).read_text(encoding="utf-8")
        except OSError:
            continue
        out[item] = "strict=False" not in text
    return out


def regression_tests_by_item(root: Path) -> dict[int, str]:
    """item -> the path of its regression test, ``repros/regression/test_itemNN_slug.py``."""
    found: dict[int, str] = {}
    for path in sorted((root / REGRESSION_DIR).glob("test_item*_*.py")):
        digits = path.name.removeprefix("test_item").split("_", 1)[0]
        if digits.isdigit():
            found.setdefault(int(digits), f"{REGRESSION_DIR}/{path.name}")
    return found
