"""Fixtures of the confinement tests (test_confine.py, test_caps.py); their other helpers are
in tests/helpers/confine.py."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def place() -> Iterator[Path]:
    """A folder every user can read (a test's tmp_path is its owner's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="artbot-confine-test-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
