"""Settings from the environment, token redaction, and Actions annotation escaping."""

from __future__ import annotations

from pathlib import Path

from artbot.errors import Problem
from artbot.report.output import (
    annotation,
    escape_data,
    escape_property,
    problem_annotation,
    redact,
)
from artbot.settings import TOKEN_VARIABLES, Settings, without_tokens

CANARY = "ghp_CANARY0123456789abcdefCANARY"


def test_gh_token_wins_and_an_empty_one_does_not_count() -> None:
    both = Settings.from_env({"GH_TOKEN": "a", "GITHUB_TOKEN": "b"})
    assert (both.token, both.secrets) == ("a", ("a", "b"))
    assert Settings.from_env({"GH_TOKEN": "", "GITHUB_TOKEN": "b"}).token == "b"
    assert Settings.from_env({}).token is None


def test_settings_read_actions_variables_and_never_show_the_token() -> None:
    env = {
        "GITHUB_TOKEN": CANARY,
        "GITHUB_ACTIONS": "true",
        "GITHUB_REPOSITORY": "o/n",
        "GITHUB_API_URL": "http://127.0.0.1:1",
        "ARTBOT_SECONDARY_RATE_WAIT": "2",
    }
    settings = Settings.from_env(env, root=Path("r"), debug=True)
    assert (settings.in_actions, settings.repository, settings.api_url) == (
        True,
        "o/n",
        "http://127.0.0.1:1",
    )
    assert settings.secondary_rate_wait == 2.0
    assert CANARY not in repr(settings) and CANARY not in str(settings)


def test_subprocesses_get_no_token_variable() -> None:
    env = {name: CANARY for name in TOKEN_VARIABLES} | {"PATH": "/bin"}
    assert without_tokens(env) == {"PATH": "/bin"}


def test_redact_replaces_every_secret() -> None:
    assert redact(f"a {CANARY} b {CANARY}", [CANARY, ""]) == "a *** b ***"


def test_annotations_escape_as_the_actions_toolkit_does() -> None:
    assert escape_data("100%\r\nnext") == "100%25%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    assert annotation("warning", "two\nlines") == "::warning::two%0Alines"
    assert (
        annotation("error", "m", file="x,y:z.yaml", line=3)
        == "::error file=x%2Cy%3Az.yaml,line=3::m"
    )


def test_a_problem_annotation_names_its_file_and_line() -> None:
    problem = Problem("findings/07.yaml", 4, "title", "too long: 100%")
    assert (
        problem_annotation(problem)
        == "::error file=findings/07.yaml,line=4::title: too long: 100%25"
    )
    no_line = Problem("findings/audit.yaml", None, "", "missing")
    assert problem_annotation(no_line) == "::error file=findings/audit.yaml::missing"
