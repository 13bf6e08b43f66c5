"""The release-wheel fixture: skipping for want of a wheel is allowed on a laptop, never in CI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.wheels import ArtWheels


def test_a_wheel_that_cannot_be_had_fails_under_ci(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true: a release check may not be skipped"):
        ArtWheels(tmp_path).wheel("not-a-version!")


def test_a_wheel_that_cannot_be_had_skips_elsewhere_saying_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=f"not in {tmp_path} and could not be fetched"):
        ArtWheels(tmp_path).wheel("not-a-version!")


def test_a_cached_wheel_is_used_without_pip(tmp_path: Path) -> None:
    wheel = tmp_path / "openpipe_art-9.9.9-py3-none-any.whl"
    wheel.write_bytes(b"")
    assert ArtWheels(tmp_path).wheel("9.9.9") == wheel
