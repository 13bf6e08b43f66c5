"""The exported regression tests' fork server, shared by tests/repro/'s modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.exported import exported_env
from tests.helpers.forkrun import ForkServer


@pytest.fixture(scope="module")
def server() -> Iterator[ForkServer]:
    forked = ForkServer(exported_env(), preload=("torch", "pytest"))
    yield forked
    forked.close()
