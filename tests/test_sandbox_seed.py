"""`artbot sandbox --seed`, then the README's three pasted lines and `artbot open --item 5`,
as a person would run them: two artbot processes (marked e2e)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from artbot.tracking.checklist import read_block

REPO = Path(__file__).resolve().parents[1]
ARTBOT = [sys.executable, "-m", "artbot"]


def pasted(lines: list[str]) -> dict[str, str]:
    """The environment after pasting the `export NAME=value  # ...` lines."""
    env = {}
    for line in lines:
        assert line.startswith("export "), line
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = value.split("  #")[0].strip()
    return env


@pytest.mark.e2e
def test_seed_then_the_pasted_lines_then_open_item_5_works_as_written(tmp_path: Path) -> None:
    state = tmp_path / "sandbox.json"
    server = subprocess.Popen(
        [*ARTBOT, "sandbox", "--seed", "--state", str(state)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        out: list[str] = []
        deadline = time.monotonic() + 60
        while not any(line.startswith("export ARTBOT_TRACKING_ISSUE=") for line in out):
            assert time.monotonic() < deadline, out
            line = server.stdout.readline()
            assert line, f"the sandbox exited: {out}"
            out.append(line.rstrip("\n"))
        exports = [line for line in out if line.startswith("export ")]
        assert [e.split("=")[0] for e in exports] == [
            "export GITHUB_API_URL",
            "export GH_TOKEN",
            "export ARTBOT_TRACKING_ISSUE",
        ]
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("GH_TOKEN", "GITHUB_TOKEN", "GITHUB_REPOSITORY", "GITHUB_ACTIONS")
        }
        env |= pasted(exports) | {"ARTBOT_SECONDARY_RATE_WAIT": "1"}
        cache = tmp_path / "cache.json"  # keep this checkout's .artbot/ untouched
        run = subprocess.run(
            [*ARTBOT, "open", "--item", "5", "--cache", str(cache)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert "item 5: filed #" in run.stdout
        # The issue is in the sandbox, linked from the tracking issue's checklist.
        from artbot.github.client import GitHubRepo

        repo = GitHubRepo("OpenPipe/ART", api_url=env["GITHUB_API_URL"], token="any")
        tracking = repo.get_issue(int(env["ARTBOT_TRACKING_ISSUE"]))
        line = next(ln for ln in (read_block(tracking.body) or "").splitlines() if "] 5. " in ln)
        assert " — #" in line
        assert tracking.number == 1111 and repo.get_issue(1108).title
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def test_a_persisted_sandbox_is_seeded_once(tmp_path: Path) -> None:
    from artbot.catalog import load_catalog
    from artbot.cli.demo import paste_lines, seed_once
    from artbot.sandbox import GitHubSandbox

    catalog = load_catalog(REPO)
    state = tmp_path / "sandbox.json"
    with GitHubSandbox(state_file=state) as first:
        number = seed_once(first, catalog)
    with GitHubSandbox(state_file=state) as again:
        assert seed_once(again, catalog) == number
        owner, name = catalog.audit.repository.split("/")
        assert again.get_issue(owner, name, number)["title"].startswith("Tracking:")
        lines = paste_lines(again.api_url, number).splitlines()
    assert f"export GITHUB_API_URL={again.api_url}" in lines
    assert f"export ARTBOT_TRACKING_ISSUE={number}" in lines
