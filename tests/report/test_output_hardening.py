"""#21.3: output that cannot be hijacked. Remote text never starts a workflow command in
Actions mode, and one redaction covers every output, the token's stripped forms included,
and redacts nothing shorter than a plausible token."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.report.output import GuardedStream, redact, secret_forms
from artbot.sandbox import GitHubSandbox
from tests.helpers.artrepo import CANARY, NAME, OWNER, TRACKING
from tests.helpers.testsandbox import TestSandbox

HOSTILE = f"Not Found {CANARY}\n::error::pwned\n::add-mask::x\n  ::warning::indented\n##[error]old"


def run(
    sandbox: GitHubSandbox, root: Path, *args: str, token: str = CANARY, actions: bool = True
) -> tuple[int, str]:
    env = {
        "GH_TOKEN": token,
        "GITHUB_TOKEN": None,
        "GITHUB_ACTIONS": "true" if actions else None,
        "GITHUB_REPOSITORY": None,
        "ARTBOT_SECONDARY_RATE_WAIT": "1",
    }
    result = CliRunner(env=env).invoke(
        cli,
        ["--root", str(root), *args, "--api-url", sandbox.api_url, "--repo", f"{OWNER}/{NAME}"]
        + ["--tracking-issue", str(TRACKING)],
    )
    return result.exit_code, result.stdout + result.stderr


def assert_no_hijack(text: str) -> None:
    """Every line starting a workflow command is one of artbot's annotations, one line."""
    for line in text.splitlines():
        if line.lstrip().startswith("::"):
            assert line.startswith(("::warning::", "::error::")), line
            assert "pwned" not in line.split("::", 2)[1]
        assert not line.lstrip().startswith(("::error::pwned", "::add-mask::")), line
        assert "##[error]" not in line


@pytest.mark.parametrize("token", [CANARY, CANARY + "\n", f"  {CANARY}\r\n"])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_hostile_error_body_starts_no_command_and_leaks_no_token(
    art: TestSandbox, root: Path, tmp_path: Path, token: str, as_json: bool
) -> None:
    """Why 4 and 5: a 404 body holding commands and the token, printed in a warning, in
    the annotation, the step summary and --json, with the token set with a trailing newline."""
    art.inject_fault("POST", r"/issues/1108/labels$", 404, message=HOSTILE)
    summary = tmp_path / "summary.md"
    code, text = run(
        art, root, "sync", "--summary", str(summary), *(["--json"] if as_json else []), token=token
    )
    assert code == 0, text
    assert "could not label #1108" in text
    assert_no_hijack(text)
    assert CANARY not in text
    assert CANARY not in summary.read_text(encoding="utf-8")
    assert "***" in summary.read_text(encoding="utf-8")
    if as_json:
        # the guard works line by line: the JSON report is still JSON, redacted
        start = text.index("{")
        data = json.JSONDecoder().raw_decode(text[start:])[0]
        assert any("could not label #1108" in w and "***" in w for w in data["warnings"])


def test_a_hostile_error_in_the_final_error_line_is_one_line(art: TestSandbox, root: Path) -> None:
    """The error that ends a run carries the remote text: flattened, escaped, redacted."""
    art.inject_fault("GET", r"/issues$", 410, message=HOSTILE)  # issues disabled
    code, text = run(art, root, "sync", token=CANARY + "\n")
    assert code == 1, text
    assert_no_hijack(text)
    assert CANARY not in text
    [error] = [ln for ln in text.splitlines() if ln.startswith("error: ")]
    assert "GitHub answered 410" in error and "pwned" in error  # all of it, on one line


@pytest.mark.parametrize("token", ["e", "short1", "a b c d e f g h"])
def test_a_token_too_short_to_redact_is_refused(art: GitHubSandbox, root: Path, token: str) -> None:
    """Why 5: `GH_TOKEN=e` redacted every "e" of the output; now it is exit 2, nothing sent."""
    code, text = run(art, root, "sync", token=token, actions=False)
    assert code == 2, text
    assert "does not hold a GitHub token" in text
    assert "***" not in text
    assert len(art.requests) == 0


def test_secret_forms_and_redaction() -> None:
    assert secret_forms([CANARY + "\n", "e", ""]) == [CANARY + "\n", CANARY]
    assert redact(f"a {CANARY}\nb", [CANARY + "\n"]) == "a ***b"
    assert redact(f"a {CANARY} b", [f" {CANARY}\r\n"]) == "a *** b"
    assert redact("item 4: create", ["e", "create"]) == "item 4: create"


def test_guarded_stream_escapes_in_actions_and_redacts_always() -> None:
    raw = io.StringIO()
    stream = GuardedStream(raw, [CANARY], in_actions=True)
    stream.write(f"plain {CANARY}\n::error::x\n   ::set-output name=a::b\nmid ::ok\n")
    stream.write("part")
    stream.write("ial ##[warning]y\n  ```\n")
    stream.command("::warning::artbot's own")
    joined = ":\u2060:"  # #53: a `::` anywhere in a line is split, not only at its start
    assert raw.getvalue().splitlines() == [
        "plain ***",
        f"(escaped) {joined}error{joined}x",
        f"(escaped)    {joined}set-output name=a{joined}b",
        f"mid {joined}ok",
        "partial # #[warning]y",
        "(escaped)   ```",
        "::warning::artbot's own",
    ]
    quiet = io.StringIO()
    GuardedStream(quiet, [CANARY], in_actions=False).write(f"::error::{CANARY}\n")
    assert quiet.getvalue() == "::error::***\n"


@pytest.mark.e2e
def test_the_actions_sync_step_starts_no_command_from_a_hostile_body(
    sandbox: TestSandbox, tracking: int, checkout: Path
) -> None:
    """Why 4: a 404 body holding commands became 8 command lines in the action's sync step;
    the token it echoes reaches neither the log, the summary nor the outputs."""
    from tests.helpers.action_harness import TOKEN, direct

    hostile = HOSTILE.replace(CANARY, TOKEN)
    sandbox.inject_fault("POST", r"/issues/1108/labels$", 404, message=hostile)
    run = direct({"command": "sync", "tracking-issue": str(tracking)}, checkout, sandbox)
    assert run.returncode == 0, run.stdout + run.stderr
    log = run.stdout + run.stderr
    assert "could not label #1108" in log
    assert_no_hijack(log)
    for text in (log, run.summary, json.dumps(run.outputs)):
        assert TOKEN not in text


def test_a_runners_other_credentials_are_redacted_too() -> None:
    from artbot.settings import Settings

    env = {
        "GH_TOKEN": CANARY,
        "ACTIONS_RUNTIME_TOKEN": "runtime-credential-value",
        "MY_SECRET": "s3cr3t-value-long",
        "HOME": "/home/runner",
    }
    settings = Settings.from_env(env)
    assert settings.token == CANARY
    text = redact(
        f"{CANARY} runtime-credential-value s3cr3t-value-long /home/runner", settings.secrets
    )
    assert text == "*** *** *** /home/runner"
