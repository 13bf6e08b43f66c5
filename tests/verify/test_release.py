"""Fetching a release's wheel: one line per download (or cache hit), and pip's failures in one
line. pip is a stand-in here (``run=``); its failure text is pip's own, captured once from
`pip download openpipe-art==9.9.9` (tests/fixtures/pip-download-no-such-version.txt, with the
index locations left out)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from artbot.errors import ReleaseUnavailable
from artbot.verify.release import fetch_release, pip_failure

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "pip-download-no-such-version.txt"


def test_a_version_that_does_not_exist_fails_in_one_line_naming_the_newest_releases() -> None:
    text = FIXTURE.read_text(encoding="utf-8")
    assert len(text) > 600  # pip's own line lists every version
    line = pip_failure("9.9.9", text)
    assert "\n" not in line and len(line) < 160
    assert line.startswith("openpipe-art 9.9.9 is not a release; releases: ")
    assert "0.5.23" in line and "0.1.0," not in line
    assert "pip lists)" in line


def test_other_pip_failures_keep_pips_last_error() -> None:
    out = "Collecting x\nERROR: Could not install packages due to an OSError: disk full\n"
    assert pip_failure("0.5.21", out) == (
        "pip could not download openpipe-art==0.5.21: ERROR: Could not install packages due "
        "to an OSError: disk full"
    )


def test_fetch_says_what_it_downloads_and_what_the_cache_had(tmp_path: Path) -> None:
    said: list[str] = []

    def fake_pip(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        dest = Path(command[command.index("-d") + 1])
        (dest / "openpipe_art-9.9.8-py3-none-any.whl").write_bytes(b"x" * 2_000_000)
        return subprocess.CompletedProcess(command, 0, "", "")

    fetch_release("9.9.8", tmp_path, run=fake_pip, progress=said.append)
    fetch_release("9.9.8", tmp_path, run=fake_pip, progress=said.append)
    assert said == [
        f"verify: downloading openpipe-art==9.9.8 with pip into {tmp_path} ...",
        "verify: downloaded openpipe_art-9.9.8-py3-none-any.whl (2.0 MB)",
        "verify: openpipe-art 9.9.8: openpipe_art-9.9.8-py3-none-any.whl from the cache "
        f"({tmp_path})",
    ]


def test_fetch_raises_pips_failure_as_one_line(tmp_path: Path) -> None:
    text = FIXTURE.read_text(encoding="utf-8")

    def fake_pip(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(command, 1, "", text)

    with pytest.raises(ReleaseUnavailable) as raised:
        fetch_release("9.9.9", tmp_path, run=fake_pip)
    assert str(raised.value) == pip_failure("9.9.9", text)


@pytest.mark.parametrize(
    "refusal",
    [
        # pip 23.2.1, as `python3 -m venv` installs it with Python 3.11
        "ERROR: Can not use any platform or abi specific options unless installing via '--target'",
        # pip 23.3 to 24.1 (measured): Requires-Python checked against the running Python
        "ERROR: Package 'openpipe-art' requires a different Python: 3.11.7 not in '>=3.12'",
    ],
)
def test_an_old_pip_is_named_with_the_pip_artbot_needs_in_one_line(refusal: str) -> None:
    """#40.4: a fresh venv's pip refused the index-digest query; the error did not say why."""
    import sys
    from importlib import metadata

    from artbot.verify.release import PIP_NEEDED, index_pin

    def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        assert command[:4] == [sys.executable, "-m", "pip", "install"]
        return subprocess.CompletedProcess(command, 1, "", f"WARNING: x\n{refusal}\n")

    with pytest.raises(ReleaseUnavailable) as caught:
        index_pin("0.5.21", run=run)
    line = str(caught.value)
    assert "\n" not in line
    assert line.startswith(f"pip {metadata.version('pip')} (of {sys.executable}) cannot ask")
    assert line.endswith(
        f"artbot needs pip {PIP_NEEDED} or newer (python -m pip install 'pip>=24.2')"
    )


def test_artbot_declares_the_pip_it_needs() -> None:
    import tomllib

    from artbot.verify.release import PIP_NEEDED

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    dependencies = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    assert f"pip>={PIP_NEEDED}" in dependencies
