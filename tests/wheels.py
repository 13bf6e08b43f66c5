"""The openpipe-art release wheels the tests read, fetched once per machine.

One cache folder: ``$ARTBOT_CACHE_DIR`` when set, else ``~/.cache/artbot/wheels``, the same
folder ``artbot verify`` uses, so a wheel is downloaded once per machine whatever runs first.
A wheel that is missing is fetched with pip (the ``network`` tier). When it cannot be had, the
test is skipped with the reason, except under ``CI=true``, where the run fails instead: CI must
never pass by skipping the release checks.

Fetching and unpacking hold a file lock, so pytest-xdist workers never race on one folder.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from artbot.errors import ArtbotError
from artbot.verify.release import cache_dir, fetch_release, unpack_wheel

RELEASES = ("0.5.20", "0.5.21", "0.5.23")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


class ArtWheels:
    """The release wheels in one cache folder; :meth:`tree` gives the folder holding ``art/``."""

    def __init__(self, cache: Path) -> None:
        self.cache = cache

    def wheel(self, version: str) -> Path:
        with self._locked():
            try:
                return fetch_release(version, self.cache)
            except ArtbotError as exc:
                self._unavailable(version, str(exc))
        raise AssertionError("unreachable")  # pragma: no cover

    def tree(self, version: str) -> Path:
        wheel = self.wheel(version)
        with self._locked():
            return unpack_wheel(wheel)

    def package(self, version: str) -> Path:
        """The unpacked ``art/`` package of ``version``."""
        return self.tree(version) / "art"

    def _unavailable(self, version: str, why: str) -> None:
        message = f"openpipe-art {version} is not in {self.cache} and could not be fetched: {why}"
        if in_ci():
            pytest.fail(f"{message} (CI=true: a release check may not be skipped)", pytrace=False)
        pytest.skip(message)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.cache.mkdir(parents=True, exist_ok=True)
        with (self.cache / ".artbot-tests.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def default_wheels() -> ArtWheels:
    return ArtWheels(cache_dir())
