"""Shared fixtures: a local GitHub (see artbot.sandbox) on a free port, fresh for each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from artbot.sandbox import GitHubSandbox


@pytest.fixture
def sandbox() -> Iterator[GitHubSandbox]:
    """A started, empty sandbox (no repositories yet); stopped after the test."""
    with GitHubSandbox() as running:
        yield running
