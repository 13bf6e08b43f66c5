"""`artbot sandbox --seed`: a persisted sandbox is seeded once, and the lines to paste name it.
(The seeded sandbox, the README's pasted lines and `open --item 5`, run as a person would run
them, are tests/project/test_readme.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_a_persisted_sandbox_is_seeded_once(tmp_path: Path) -> None:
    from artbot.cli.demo import paste_lines, seed, seeded_already
    from artbot.records.catalog import load_catalog
    from artbot.sandbox import GitHubSandbox

    catalog = load_catalog(REPO)
    state = tmp_path / "sandbox.json"
    with GitHubSandbox(state_file=state) as first:
        assert seeded_already(first, catalog) is None
        number = seed(first, catalog)
    with GitHubSandbox(state_file=state) as again:  # as `artbot sandbox --seed` restarted
        assert seeded_already(again, catalog) == number
        owner, name = catalog.audit.repository.split("/")
        assert again.get_issue(owner, name, number)["title"].startswith("Tracking:")
        lines = paste_lines(again.api_url, number, seeded=False).splitlines()
    assert f"export GITHUB_API_URL={again.api_url}" in lines
    assert f"export ARTBOT_TRACKING_ISSUE={number}" in lines
    # #40: a restart that seeded nothing does not say it seeded.
    assert lines[0] == (
        f"Nothing seeded: the sandbox's state holds the tracking issue #{number} already. "
        "In another shell, paste:"
    )
    assert paste_lines("http://x", number).startswith("Seeded #1108-#1110 and the tracking issue.")


def test_the_lines_to_paste_run_artbot_as_it_was_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A newcomer runs `.venv/bin/artbot sandbox --seed` (or `make sandbox`) without the venv
    active: the sandbox's "then try" line says `.venv/bin/artbot`, not a bare `artbot`."""
    from artbot.cli.demo import paste_lines
    from artbot.cli.sandbox import how_artbot_was_run

    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "artbot").write_text("#!/bin/sh\n")
    (bin_dir / "artbot").chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert how_artbot_was_run(".venv/bin/artbot") == ".venv/bin/artbot"
    assert how_artbot_was_run(str(bin_dir / "artbot")) == ".venv/bin/artbot"
    assert how_artbot_was_run("/elsewhere/bin/artbot") == "/elsewhere/bin/artbot"
    assert how_artbot_was_run("/x/artbot/__main__.py") == "artbot"  # python -m artbot
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")  # the venv is active
    assert how_artbot_was_run(str(bin_dir / "artbot")) == "artbot"
    lines = paste_lines("http://127.0.0.1:1", 1111, ".venv/bin/artbot").splitlines()
    assert lines[-1] == (
        "then try: .venv/bin/artbot open --item 5 --dry-run; .venv/bin/artbot open --item 5; "
        ".venv/bin/artbot sync"
    )
