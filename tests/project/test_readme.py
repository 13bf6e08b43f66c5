"""The README's paths work as written: its ``console`` blocks, pasted in order as a newcomer
would paste them, from a copy of this checkout, against the sandbox (as sqlite-utils runs its
documentation's examples).

Each ```console block of README.md is part of one session. A line starting with ``$ `` is a
command, run by bash in the copy (the files git tracks, and new ones it does not ignore) with
a fresh user's environment: no token, no GitHub or artbot variables, no ``make`` of an outer
run, and no artbot on ``PATH``, so a bare ``artbot`` fails as it would on a fresh machine. The
lines after a command are what it must print, in order (``...`` stands for any lines, ``PORT``
for a port number). A command whose shown output has ``export`` lines runs in the foreground
(the sandbox): it is started, read until the shown lines have come, and its ``export`` lines
are pasted into the environment of the commands after it, as into "another shell". Every
command must exit 0.

Two things differ from a fresh clone, on purpose. ``make test`` is not run: it is this suite,
which CI runs on a fresh clone (.ci/run). And the copy's ``.venv`` is a link to the one this
suite runs in, so ``make`` finds it made (the first command on a fresh clone creates it, in
minutes); nothing is installed into it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from artbot.settings import TRANSCRIPT_VARIABLE
from artbot.tracking.checklist import read_block

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
CONSOLE = re.compile(r"^```console\n(.*?)^```", re.M | re.S)
NOT_RUN = {"make test": "this suite itself; CI runs it on a fresh clone (.ci/run)"}
# What an outer run leaves in the environment that a newcomer's fresh shell would not have.
NOT_FRESH = ("GH_", "GITHUB_", "ARTBOT_", "INPUT_", "RUNNER_", "VIRTUAL_ENV", "MAKE", "MFLAGS")


@dataclass
class Step:
    command: str
    shown: list[str] = field(default_factory=list)  # the lines the README shows after it

    @property
    def serves(self) -> bool:
        return any(line.startswith("export ") for line in self.shown)


def session(text: str) -> list[Step]:
    """The README's console blocks as one list of commands, each with its shown output."""
    steps: list[Step] = []
    for block in CONSOLE.findall(text):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append(Step(line[2:]))
            elif steps:
                steps[-1].shown.append(line)
    return steps


def pattern(shown: str) -> re.Pattern[str]:
    return re.compile(re.escape(shown).replace("PORT", r"\d+"))


def unmatched(shown: list[str], lines: list[str]) -> list[str]:
    """The shown lines that ``lines`` does not print in that order ("..." skips any)."""
    wanted = [pattern(s) for s in shown if s.strip() != "..."]
    at = 0
    for i, want in enumerate(wanted):
        while at < len(lines) and not want.fullmatch(lines[at].rstrip()):
            at += 1
        if at == len(lines):
            return [w.pattern for w in wanted[i:]]
        at += 1
    return []


def fresh_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(NOT_FRESH)}
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    env["PATH"] = os.pathsep.join(d for d in path if not (Path(d) / "artbot").exists())
    # The suite's check of what the sandbox answers (tests/conftest.py), not a user's setting.
    if TRANSCRIPT_VARIABLE in os.environ:
        env[TRANSCRIPT_VARIABLE] = os.environ[TRANSCRIPT_VARIABLE]
    return env


def copy_of_the_checkout(target: Path) -> Path:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (REPO / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target / name)
    stamp = REPO / ".venv" / ".installed"
    (target / ".venv").symlink_to(REPO / ".venv", target_is_directory=True)
    made = stamp.stat().st_mtime
    os.utime(target / "pyproject.toml", (made - 1, made - 1))  # the venv is up to date
    return target


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    if not (REPO / ".venv" / ".installed").exists():
        pytest.skip("needs this checkout's .venv, as `make` creates it")
    return copy_of_the_checkout(tmp_path / "artbot")


@pytest.fixture
def servers() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:  # Ctrl-C in the sandbox's shell: make and the sandbox under it
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)


def serve(step: Step, cwd: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], list[str]]:
    """Start a foreground command; return it and its lines once the shown ones have come."""
    process = subprocess.Popen(
        ["bash", "-c", step.command],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 120
    while unmatched(step.shown, lines):
        line = process.stdout.readline()
        assert line and time.monotonic() < deadline, (step.command, lines)
        lines.append(line.rstrip("\n"))
    return process, lines


def test_the_readme_s_console_blocks_work_as_pasted(
    checkout: Path, servers: list[subprocess.Popen[str]]
) -> None:
    steps = session(README.read_text(encoding="utf-8"))
    commands = [s.command.split("#")[0].strip() for s in steps]
    assert set(NOT_RUN) <= set(commands), "NOT_RUN names a command the README no longer has"
    assert len(commands) - len(NOT_RUN) >= 5, commands

    shell = fresh_environment()  # the first shell; the sandbox's pasted lines open a second
    other = dict(shell)
    for step, command in zip(steps, commands, strict=True):
        if command in NOT_RUN:
            continue
        if step.serves:
            process, lines = serve(step, checkout, shell)
            servers.append(process)
            for line in lines:
                if line.startswith("export "):
                    name, _, value = line.removeprefix("export ").partition("=")
                    other[name] = value.split("  #")[0].strip()
            assert not any("artbot's repository is not known" in x for x in lines), lines
            continue
        done = subprocess.run(
            ["bash", "-c", step.command],
            cwd=checkout,
            env=other,
            capture_output=True,
            text=True,
            timeout=300,
        )
        printed = (done.stdout + done.stderr).splitlines()
        assert done.returncode == 0, (step.command, printed[-20:])
        assert unmatched(step.shown, printed) == [], (step.command, printed[-20:])

    # What `open --item 5` did, as GitHub (the sandbox) shows it: the tracking issue's
    # checklist links the new issue, which is one of its sub-issues.
    api = other["GITHUB_API_URL"] + "/repos/OpenPipe/ART/issues"
    tracking = get(f"{api}/{other['ARTBOT_TRACKING_ISSUE']}")
    line = next(x for x in (read_block(tracking["body"]) or "").splitlines() if "] 5. " in x)
    number = int(line.split(" — #")[1].split()[0])
    subs = [i["number"] for i in get(f"{api}/{tracking['number']}/sub_issues")]
    assert number in subs and {1108, 1109, 1110} <= set(subs)


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:  # the loopback sandbox
        return json.loads(answer.read())


def test_the_session_reader() -> None:
    text = "```console\n$ a   # x\nout PORT\n...\n```\n\n```bash\n$ b\n```\n```console\n$ c\n```\n"
    assert session(text) == [Step("a   # x", ["out PORT", "..."]), Step("c")]
    assert unmatched(["out PORT", "...", "end"], ["out 8080", "mid", "end"]) == []
    assert unmatched(["end", "out PORT"], ["out 8080", "end"]) != []  # in order, or not at all
