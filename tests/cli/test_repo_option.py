"""The repositories a command is told about: ``--repo`` in the forms people paste (OWNER/NAME,
with ``.git``, an https or SSH URL), one line and exit 2 for what is not a repository or not
there, and the note when artbot's own repository (for the issues' links) is not known: once,
last, only from a command that rendered issues, saying what it found instead."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from artbot.cli import cli
from artbot.cli.demo import seed
from artbot.errors import BadInput
from artbot.inputs import check_repository, repository_to_use
from artbot.records.catalog import load_catalog
from artbot.records.toolsource import resolve_tool_source
from artbot.sandbox import GitHubSandbox

REPO = Path(__file__).resolve().parents[2]
TOKEN = "ghp_sandboxRepoTest0123456789"
NOT_KNOWN = "note: artbot's repository is not known"


@pytest.mark.parametrize(
    "given",
    [
        "OpenPipe/ART",
        "OpenPipe/ART.git",
        "https://github.com/OpenPipe/ART",
        "https://github.com/OpenPipe/ART.git/",
        "git@github.com:OpenPipe/ART.git",
        "ssh://git@github.com/OpenPipe/ART.git",
        "ssh://git@github.com:22/OpenPipe/ART",
        "github.com/OpenPipe/ART",
    ],
)
def test_repo_takes_owner_name_its_urls_and_a_git_suffix(given: str) -> None:
    assert check_repository(given) == "OpenPipe/ART"


def test_the_repository_comes_from_repo_then_the_environment_then_the_audit() -> None:
    assert repository_to_use(None, None, "OpenPipe/ART") == "OpenPipe/ART"
    assert repository_to_use(None, "me/fork", "OpenPipe/ART") == "me/fork"
    assert repository_to_use("git@github.com:me/x.git", "me/fork", "OpenPipe/ART") == "me/x"
    with pytest.raises(BadInput, match="^--repo '': not a repository"):
        repository_to_use("", "me/fork", "OpenPipe/ART")  # empty is a mistake, not a default
    with pytest.raises(BadInput, match=r"^\$GITHUB_REPOSITORY 'me': not a repository"):
        repository_to_use(None, "me", "OpenPipe/ART")


def run(sandbox: GitHubSandbox, *args: str, root: Path = REPO) -> Result:
    env = {"GH_TOKEN": TOKEN, "GITHUB_TOKEN": None, "GITHUB_REPOSITORY": None}
    base = ["--root", str(root), "open", "--item", "5", "--api-url", sandbox.api_url]
    return CliRunner(env=env).invoke(cli, [*base, *args])


@pytest.mark.parametrize("flag", ["--repo", "-R"])  # -R, as gh has it (#40)
def test_an_ssh_url_files_in_that_repository(sandbox: GitHubSandbox, flag: str) -> None:
    tracking = seed(sandbox, load_catalog(REPO))
    result = run(
        sandbox,
        "--dry-run",
        "--tracking-issue",
        str(tracking),
        flag,
        "git@github.com:OpenPipe/ART.git",
    )
    assert result.exit_code == 0, result.output
    assert {r.path.split("/")[3] for r in sandbox.requests} == {"ART"}


@pytest.mark.parametrize("given", ["", " ", "OpenPipe/ART/issues"])
def test_what_is_not_a_repository_is_one_line_and_exit_2(
    sandbox: GitHubSandbox, given: str
) -> None:
    result = run(sandbox, "--repo", given)
    assert result.exit_code == 2
    assert (
        result.stderr == f"error: --repo {given!r}: not a repository; give OWNER/NAME (e.g. "
        "OpenPipe/ART) or its https or SSH URL\n"
    )
    assert len(sandbox.requests) == 0


def test_a_repository_that_is_not_there_says_what_to_check(sandbox: GitHubSandbox) -> None:
    seed(sandbox, load_catalog(REPO))
    result = run(sandbox, "--repo", "Other/Repo", "--tracking-issue", "1111")
    assert result.exit_code == 2, result.output
    [line] = result.stderr.splitlines()  # no PyGithub line, no note
    assert line.startswith(f"error: repository Other/Repo not found at {sandbox.api_url}: ")
    assert "spelling" in line and "private repository" in line and "token" in line
    # The list's 404, then the API's own /rate_limit, which answers: the repository is wrong.
    assert [(r.method, r.status) for r in sandbox.requests] == [("GET", 404), ("GET", 200)]


@pytest.mark.parametrize("from_env", [False, True])
def test_an_api_url_with_a_wrong_path_is_blamed_not_the_repository(
    sandbox: GitHubSandbox, from_env: bool
) -> None:
    """#54: `--api-url http://host/wrong` answered 404 for the repository, and artbot said the
    repository was not found. No GitHub API answers there: the URL is named, by where it came
    from (the flag or $GITHUB_API_URL), and the repository is not blamed."""
    seed(sandbox, load_catalog(REPO))
    wrong = sandbox.api_url + "/api/v9"
    env = {"GH_TOKEN": TOKEN, "GITHUB_TOKEN": None, "GITHUB_REPOSITORY": None}
    args = ["--root", str(REPO), "open", "--item", "5", "--tracking-issue", "1111", "--dry-run"]
    if from_env:
        env["GITHUB_API_URL"] = wrong
    else:
        args += ["--api-url", wrong]
    result = CliRunner(env=env).invoke(cli, [*args, "--repo", "OpenPipe/ART"])
    assert result.exit_code == 2, result.output
    [line] = result.stderr.splitlines()
    named = "$GITHUB_API_URL" if from_env else "--api-url"
    assert line.startswith(f"error: {named} {wrong}: no GitHub API answers there"), line
    assert "repository" not in line.split(":", 2)[2].split("(")[0] and "spelling" not in line
    assert [(r.method, r.status) for r in sandbox.requests] == [("GET", 404), ("GET", 404)]


def git(root: Path, *args: str) -> None:
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", *ident, "-C", str(root), *args], check=True, capture_output=True)


def test_the_note_says_what_was_found_instead(tmp_path: Path) -> None:
    assert "is not in a git checkout" in resolve_tool_source(tmp_path).found
    git(tmp_path, "init", "-q")
    git(tmp_path, "commit", "-q", "--allow-empty", "-m", "x")
    assert resolve_tool_source(tmp_path).found == "this checkout has no git remote origin"
    git(tmp_path, "remote", "add", "origin", "/srv/git/artbot")
    found = resolve_tool_source(tmp_path)
    assert found.repository is None
    assert found.note() == (
        f"{NOT_KNOWN} (git remote origin is /srv/git/artbot, not a repository URL such as "
        "GitHub's), so the issues name each script and test without a link; give "
        "--tool-repository OWNER/NAME to link them"
    )
    # A token in a remote's URL is never shown.
    git(
        tmp_path,
        "remote",
        "set-url",
        "origin",
        "https://x-access-token:ghs_secret1234@example.org/",
    )
    assert "ghs_secret1234" not in resolve_tool_source(tmp_path).found
    assert "https://example.org/" in resolve_tool_source(tmp_path).found


def test_the_note_comes_once_last_and_only_where_issues_were_rendered(
    sandbox: GitHubSandbox, tmp_path: Path
) -> None:
    tracking = seed(sandbox, load_catalog(REPO))
    root = tmp_path / "checkout"  # not a git checkout: no repository to link to
    for part in ("findings", "repros", "templates"):
        shutil.copytree(REPO / part, root / part)
    result = run(sandbox, "--dry-run", "--tracking-issue", str(tracking), root=root)
    assert result.exit_code == 0, result.output
    assert result.stderr.count(NOT_KNOWN) == 1
    assert result.stderr.splitlines()[-1].startswith(NOT_KNOWN)
    assert f"(--root {root} is not in a git checkout)" in result.stderr
    # A run that stops at an error says the error alone; a command that renders nothing, nothing.
    failed = run(sandbox, "--repo", "Other/Repo", root=root)
    assert failed.exit_code == 2 and NOT_KNOWN not in failed.stderr
    listed = CliRunner().invoke(cli, ["--root", str(root), "list"])
    assert listed.exit_code == 0 and NOT_KNOWN not in listed.stderr


def test_sandbox_repo_is_checked_as_open_s_is() -> None:
    result = CliRunner().invoke(cli, ["sandbox", "--repo", "bad"])
    assert result.exit_code == 2 and result.stderr.startswith("error: --repo 'bad': not a ")
    assert "internal error" not in result.output
