"""Settings is the one reader of the environment: a bad value stops the run with exit 2 and the
variable's name, and no other module of the package reads ``os.environ`` (read from the source)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.errors import BadInput
from artbot.settings import DEFAULT_SECONDARY_RATE_WAIT, Settings

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "artbot"
CANARY = "ghp_CANARY0123456789abcdefCANARY"
# terminal.py sizes --help as click does ($COLUMNS) without importing settings, so that
# `artbot --help` loads nothing of artbot's but the command definitions (tests/cli/test_version.py).
# patchtest/harness.py runs inside the confined regression-test child, never in artbot's own
# process: it reads the one variable that names the tree under test. verify/zygote.py sets, in
# each check it forks, the environment that check was given (as a new interpreter would have it).
READS_ON_ITS_OWN = {
    "artbot/settings.py",
    "artbot/cli/terminal.py",
    "artbot/patchtest/harness.py",
    "artbot/verify/zygote.py",
}


@pytest.mark.parametrize("value", ["abc", "-1", "nan", "inf", "1e999"])
def test_a_bad_rate_wait_exits_2_naming_the_variable(value: str) -> None:
    env = {"ARTBOT_SECONDARY_RATE_WAIT": value, "GH_TOKEN": CANARY}
    result = CliRunner(env=env).invoke(cli, ["--root", str(REPO), "validate"])
    assert result.exit_code == 2, result.output + result.stderr
    assert "ARTBOT_SECONDARY_RATE_WAIT" in result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    with pytest.raises(BadInput, match="ARTBOT_SECONDARY_RATE_WAIT"):
        Settings.from_env({"ARTBOT_SECONDARY_RATE_WAIT": value})


def test_a_bad_value_that_echoes_a_token_is_redacted() -> None:
    env = {"ARTBOT_SECONDARY_RATE_WAIT": CANARY, "GH_TOKEN": CANARY}
    result = CliRunner(env=env).invoke(cli, ["--root", str(REPO), "validate"])
    assert result.exit_code == 2
    assert CANARY not in result.output + result.stderr


def test_unset_or_empty_rate_wait_is_the_default_and_a_number_is_taken() -> None:
    assert Settings.from_env({}).secondary_rate_wait == DEFAULT_SECONDARY_RATE_WAIT
    empty = {"ARTBOT_SECONDARY_RATE_WAIT": " "}
    assert Settings.from_env(empty).secondary_rate_wait == DEFAULT_SECONDARY_RATE_WAIT
    assert Settings.from_env({"ARTBOT_SECONDARY_RATE_WAIT": "0.5"}).secondary_rate_wait == 0.5


def test_the_wheel_cache_and_the_child_environment_come_from_settings(tmp_path: Path) -> None:
    env = {"ARTBOT_CACHE_DIR": str(tmp_path), "GH_TOKEN": CANARY, "GITHUB_TOKEN": CANARY}
    settings = Settings.from_env(env | {"PATH": "/bin"})
    assert settings.wheel_cache == tmp_path
    assert dict(settings.child_env) == {"ARTBOT_CACHE_DIR": str(tmp_path), "PATH": "/bin"}
    home = Settings.from_env({}).wheel_cache
    assert home == Path.home() / ".cache" / "artbot" / "wheels"


READERS = {"environ", "getenv", "environb"}


def _reads_environment(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in READERS
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        ) or (
            isinstance(node, ast.ImportFrom)
            and node.module == "os"
            and {a.name for a in node.names} & READERS
        ):
            lines.append(node.lineno)
    return lines


def test_no_other_module_reads_the_environment() -> None:
    found = {
        str(p.relative_to(REPO)): lines
        for p in sorted(PACKAGE.rglob("*.py"))
        if (lines := _reads_environment(p))
    }
    assert set(found) == READS_ON_ITS_OWN, found


# -- the gh CLI's token (#40) ----------------------------------------------------------------

GH_SCRIPT = """#!/bin/sh
echo "$@" >> "{calls}"
{body}
"""


def fake_gh(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    calls = folder / "calls.txt"
    gh = folder / "gh"
    gh.write_text(GH_SCRIPT.format(calls=calls, body=body), encoding="utf-8")
    gh.chmod(0o755)
    return calls


SIGNED_IN = "echo gho_fromtheghcli0123456789abcdefABCDEF"


def test_without_a_token_variable_the_gh_clis_token_is_used_for_github_com(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from artbot.cli.context import Context
    from artbot.report.output import guarded

    calls = fake_gh(tmp_path / "bin", SIGNED_IN)
    settings = Settings.from_env({"PATH": str(tmp_path / "bin")})
    assert settings.token is None
    context = Context(settings)
    with guarded(settings):
        context.use_gh_token(None)
        print("echo: gho_fromtheghcli0123456789abcdefABCDEF")
    token = "gho_fromtheghcli0123456789abcdefABCDEF"
    assert context.settings.token == token and token in context.settings.secrets
    assert calls.read_text(encoding="utf-8").split() == [
        "auth",
        "token",
        "--hostname",
        "github.com",
    ]
    out, err = capsys.readouterr()
    assert err == "token: from `gh auth token` (neither GH_TOKEN nor GITHUB_TOKEN is set)\n"
    assert token not in out + err and "***" in out  # redacted from then on
    assert "gho_" not in repr(context.settings)


@pytest.mark.parametrize(
    ("env", "api_url", "body"),
    [
        ({"GH_TOKEN": "ghp_set0123456789"}, None, SIGNED_IN),  # a token variable wins
        ({"GITHUB_TOKEN": "ghs_set0123456789"}, None, SIGNED_IN),
        ({}, "http://127.0.0.1:9", SIGNED_IN),  # github.com's token never goes elsewhere
        ({"GITHUB_API_URL": "https://ghe.example/api/v3"}, None, SIGNED_IN),
        ({"GITHUB_ACTIONS": "true"}, None, SIGNED_IN),  # the workflow gives the token
        ({}, None, "echo 'You are not logged into any GitHub hosts.' >&2; exit 1"),
        ({}, None, "echo 'two words'"),
    ],
)
def test_the_gh_clis_token_is_not_taken(
    tmp_path: Path, env: dict[str, str], api_url: str | None, body: str
) -> None:
    fake_gh(tmp_path / "bin", body)
    settings = Settings.from_env({"PATH": str(tmp_path / "bin"), **env})
    assert settings.with_gh_token(api_url).token_source is None


def test_without_gh_installed_nothing_is_taken(tmp_path: Path) -> None:
    settings = Settings.from_env({"PATH": str(tmp_path)})
    assert settings.with_gh_token(None) is settings
