"""The openpipe-art release wheels the tests read, fetched once per machine.

One cache folder: ``$ARTBOT_CACHE_DIR`` when set, else ``~/.cache/artbot/wheels``, the same
folder ``artbot verify`` uses, so a wheel is downloaded once per machine whatever runs first.
As in ``verify``, the cache is trusted for nothing: each wheel is checked against the sha256 the
index publishes for it (:data:`INDEX_SHA256`), and unpacked afresh, once per test process.
A wheel that is missing is fetched with pip (the ``network`` tier). When it cannot be had, the
test is skipped with the reason, except under ``CI=true``, where the run fails instead: CI must
never pass by skipping the release checks.

Fetching and unpacking hold a file lock, so pytest-xdist workers never race on one folder.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from artbot.errors import ArtbotError
from artbot.verify.release import Pin, cache_dir, fetch_release, fresh_folder, unpack

RELEASES = ("0.5.20", "0.5.21", "0.5.23")
# The sha256 the index publishes for each release's wheel, as pip reported it
# (`pip install --dry-run --no-deps --only-binary=:all: --python-version 3.12 --report -
# openpipe-art==V`, 2026-12-04); 0.5.21's and 0.5.23's are also those in findings/status/.
INDEX_SHA256 = {
    "0.5.20": "52c7c1c0dcc69aadba4697e16f54109893ea7dcf536e503a1a2c3d34f7bbf38b",
    "0.5.21": "480684e0782891800622b4c3e41d0919914cb9384118a4b2ae6ce2c32ce8d343",
    "0.5.23": "35fe2658f0616dcc3f77f69431a5c8ebc2db0194e6fe19e3ca7e34165de9d292",
}


def pin(version: str) -> Pin:
    """The index's digest of a release the tests read, as ``release_tree`` takes it."""
    return Pin(INDEX_SHA256[version], "from the index, held by tests/helpers/wheels.py")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


class ArtWheels:
    """The release wheels in one cache folder; :meth:`tree` gives the folder holding ``art/``."""

    def __init__(self, cache: Path) -> None:
        self.cache = cache
        self._trees: dict[str, Path] = {}

    def wheel(self, version: str) -> Path:
        with self._locked():
            try:
                wheel = fetch_release(version, self.cache)
            except ArtbotError as exc:
                self._unavailable(version, str(exc))
        expected = INDEX_SHA256.get(version)
        if expected is not None:
            digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
            assert digest == expected, f"{wheel} is not the release (sha256 {digest}): delete it"
        return wheel

    def tree(self, version: str) -> Path:
        """The release unpacked afresh (once per test process), from the checked wheel."""
        if version not in self._trees:
            wheel = self.wheel(version)
            self._trees[version] = unpack(wheel.read_bytes(), fresh_folder() / wheel.stem)
        return self._trees[version]

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


def crafted_wheel(
    wheel: Path, files: dict[str, str], *, metadata_version: str | None = None
) -> Path:
    """A wheel the suite writes: ``files`` (path -> text) and the dist-info a wheel needs
    (``METADATA`` says ``metadata_version``, by default the version in the file name)."""
    import zipfile

    from artbot.verify.wheel import wheel_version

    name, version = wheel_version(wheel.name)
    with zipfile.ZipFile(wheel, "w") as whl:
        for rel, text in files.items():
            whl.writestr(rel, text)
        meta = (
            f"Metadata-Version: 2.1\nName: openpipe-art\nVersion: {metadata_version or version}\n"
        )
        whl.writestr(f"{name}-{version}.dist-info/METADATA", meta)
    return wheel
