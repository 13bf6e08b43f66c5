"""Rules the suite keeps about itself: one set of hypothesis settings; item numbers read
from the catalog."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
MODULES = sorted(p for p in TESTS.glob("*.py") if p.name != Path(__file__).name)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_property_tests_use_the_profile_settings_only(path: Path) -> None:
    """Hypothesis settings live in conftest.py's profiles, so every property test has the same
    (no deadline); a per-test ``@settings(...)`` would override them for one test."""
    if path.name == "conftest.py":
        return
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"^\s*@(hypothesis\.)?settings\(", text, re.MULTILINE), path.name
    assert not re.search(r"^\w+ = (hypothesis\.)?settings\(", text, re.MULTILINE), path.name


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_item_numbers_come_from_the_catalog(path: Path) -> None:
    """No hard-coded run of item numbers (``range(1, 12)``): tests read tests/helpers/shipped.py."""
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"range\((1|4), 1[12]\)", text), path.name
