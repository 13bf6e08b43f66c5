"""#40.3: failures are failures. With GitHub's API unreachable (a closed port) or silent (a
socket that accepts and never answers), every command that asks GitHub exits 1 with one whole
error line (a time-out called a time-out, nothing cut mid-word), says what it waits for while it
waits, and leaves findings/ as it was: `verify changes --record` offline once exited 0 and
wrote "GitHub could not be reached" into the status files."""

from __future__ import annotations

import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
TOKEN = "ghp_" + "0123456789abcdef" * 2 + "0123"  # shaped like a token; never sent anywhere
COMMANDS = [
    ("open", "--item", "5"),
    ("open", "--item", "5", "--dry-run"),
    ("sync",),
    ("sync", "--dry-run"),
    ("verify", "changes", "--record"),
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    out = tmp_path / "checkout"
    for part in ("findings", "templates", "repros"):
        shutil.copytree(REPO / part, out / part, ignore=shutil.ignore_patterns("__pycache__"))
    return out


@pytest.fixture
def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # bound and released: nothing listens there


@pytest.fixture
def silent_api() -> Iterator[str]:
    """A server that accepts every connection and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.05)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    server.close()
    for conn in held:
        conn.close()


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in (root / "findings").rglob("*")
        if p.is_file()
    }


def run(root: Path, api: str, args: tuple[str, ...]) -> tuple[int, str, str]:
    env = {"GH_TOKEN": TOKEN, "GITHUB_TOKEN": None, "GITHUB_ACTIONS": None}
    env |= {"ARTBOT_GITHUB_TIMEOUT": "1", "ARTBOT_TRACKING_ISSUE": None}
    result = CliRunner(env=env).invoke(
        cli, ["--root", str(root), *args, "--api-url", api, *_tracking(args)]
    )
    return result.exit_code, result.stdout, result.stderr


def _tracking(args: tuple[str, ...]) -> list[str]:
    return ["--tracking-issue", "1111"] if args[0] in ("open", "sync") else []


def _error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], stderr
    assert TOKEN not in stderr
    return errors[0]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_an_unreachable_github_fails_every_command_in_one_line(
    root: Path, closed_port: str, args: tuple[str, ...]
) -> None:
    before = snapshot(root)
    code, _, stderr = run(root, closed_port, args)
    assert code == 1, stderr
    line = _error_line(stderr)
    port = closed_port.rsplit(":", 1)[1]
    assert f"could not connect to 127.0.0.1:{port} ([Errno 111] Connection refused)" in line
    assert line.endswith("check --api-url (or $GITHUB_API_URL) and the network")
    assert snapshot(root) == before


@pytest.mark.parametrize("args", [COMMANDS[0], COMMANDS[3], COMMANDS[4]], ids=" ".join)
def test_a_silent_github_is_a_time_out_said_while_waiting(
    root: Path, silent_api: str, args: tuple[str, ...]
) -> None:
    before = snapshot(root)
    code, _, stderr = run(root, silent_api, args)
    assert code == 1, stderr
    line = _error_line(stderr)
    assert "timed out: 127.0.0.1:" in line and "accepted the connection but sent no answer" in line
    assert line.endswith("or give it longer ($ARTBOT_GITHUB_TIMEOUT)"), line
    assert "could not connect" not in line and "ReadTim" not in line
    waits = [ln for ln in stderr.splitlines() if ln.startswith("waiting for GitHub: GET ")]
    # Asked three times: two waits, each said as it starts.
    assert len(waits) == 2, stderr
    assert all("no answer within 1 s (read time-out); asking again in 0 s (try" in w for w in waits)
    assert snapshot(root) == before


def test_a_timeout_setting_that_is_not_seconds_is_bad_input(root: Path) -> None:
    result = CliRunner(env={"ARTBOT_GITHUB_TIMEOUT": "0"}).invoke(
        cli, ["--root", str(root), "sync", "--dry-run", "--api-url", "http://127.0.0.1:9"]
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: $ARTBOT_GITHUB_TIMEOUT: not a number of seconds (more than 0): '0'"
    )
