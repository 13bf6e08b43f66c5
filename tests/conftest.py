"""Shared fixtures: a local GitHub (see artbot.sandbox) on a free port, fresh for each test.

Hypothesis profiles: "ci" (the default) is derandomized, so a run's examples depend only on the
code; "nightly" (``HYPOTHESIS_PROFILE=nightly``, CI's scheduled run) draws fresh random ones.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from artbot.sandbox import GitHubSandbox

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("nightly", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def sandbox() -> Iterator[GitHubSandbox]:
    """A started, empty sandbox (no repositories yet); stopped after the test."""
    with GitHubSandbox() as running:
        yield running
