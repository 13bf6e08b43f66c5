"""Resolving ``latest`` to the newest openpipe-art release: pip is asked, never guessed."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from artbot.errors import ReleaseUnavailable
from artbot.verify.release import newest_release, resolve

ANSWER = "openpipe-art (0.5.23)\nAvailable versions: 0.5.23, 0.5.21, 0.5.20\n"


def pip(stdout: str, rc: int = 0, calls: list[list[str]] | None = None):  # type: ignore[no-untyped-def]
    def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if calls is not None:
            calls.append(command)
        return subprocess.CompletedProcess(command, rc, stdout, "no network" if rc else "")

    return run


def test_latest_is_what_pip_says_for_python_312() -> None:
    calls: list[list[str]] = []
    assert newest_release(run=pip(ANSWER, calls=calls)) == "0.5.23"
    assert calls == [[
        sys.executable, "-m", "pip", "index", "versions", "--python-version", "3.12",
        "--only-binary=:all:", "openpipe-art",
    ]]  # fmt: skip


def test_a_version_is_kept_and_only_latest_asks_pip() -> None:
    calls: list[list[str]] = []
    assert resolve("0.5.21", run=pip(ANSWER, calls=calls)) == "0.5.21"
    assert calls == []
    assert resolve("latest", run=pip(ANSWER)) == "0.5.23"


@pytest.mark.parametrize(
    ("stdout", "rc"), [("", 1), ("something else\n", 0), ("openpipe-art (0.5.23; rm -rf)\n", 0)]
)
def test_no_usable_answer_is_an_error(stdout: str, rc: int) -> None:
    with pytest.raises(ReleaseUnavailable):
        newest_release(run=pip(stdout, rc))
