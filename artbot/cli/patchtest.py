"""``artbot test`` (a patch on one item, at a terminal) and ``artbot answer-tests`` (the
``/artbot test`` comments on artbot's issues, answered); thin, the work is in
:mod:`artbot.patchtest`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from .context import Context


@click.command("test")
@click.option("--item", type=int, required=True, help="The audit item or follow-up to check.")
@click.option(
    "--patch",
    "patch_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="A unified diff git apply takes in ART's repository (git diff, git format-patch, "
    "diff -u, diff -ruN OLD NEW).",
)
@click.option(
    "--release",
    metavar="VERSION",
    help="The openpipe-art release to apply it to [default: the newest in findings/status/].",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    metavar="N",
    help="Draw the check's inputs with this seed (to repeat a run) [default: a secret one, "
    "said after the run].",
)
@click.pass_obj
def test(obj: Context, item: int, patch_file: Path, release: str | None, seed: int | None) -> None:
    """Apply a patch to a release's code (pure Python, only under src/art/), run the item's
    check and its regression test on the release and on the patched copy, confined and without
    a token, and print, as plain text, what artbot would answer to `/artbot test`. Exit 0
    when the patch fixes the item and its text reaches for nothing beyond numbers, 1 when it
    does not (or it is not vouched for, a check could not run, or the release could not be
    fetched, as for `verify`), 2 when it was refused (the patch, the item, the version)."""
    from ..extras import require
    from ..patchtest.command import Refusal, checked_diff
    from ..patchtest.terminal import plain, render_trial_text
    from ..patchtest.trial import newest_checked, run_trial

    require("test")
    catalog = obj.catalog()
    catalog.get(item)  # an unknown item is a usage error, before anything runs
    text = patch_file.read_text(encoding="utf-8", errors="replace")
    version = release or newest_checked(catalog.root)
    parsed = checked_diff(text, version)
    if isinstance(parsed, Refusal):
        click.echo(f"artbot test: not run: {plain(parsed.reason, 600)}")
        raise SystemExit(2)
    outcome = run_trial(
        catalog,
        item,
        parsed.files,
        version,
        source=f"`{patch_file.name}`",
        cache=obj.settings.wheel_cache,
        secrets=obj.settings.secrets,
        progress=lambda line: click.echo(line, err=True),
        seed=seed,
    )
    if isinstance(outcome, Refusal):
        click.echo(f"artbot test: not run: {plain(outcome.reason, 600)}")
        raise SystemExit(outcome.exit_code)
    click.echo(render_trial_text(outcome, catalog.get(item)), nl=False)
    raise SystemExit(0 if outcome.vouched else 1)


PHASES = ("all", "read", "check", "post")


@click.command("answer-tests")
@click.option(
    "--phase",
    type=click.Choice(PHASES),
    default="all",
    show_default=True,
    help="read: plan the answers (GitHub read access, no ART code) into --tasks; check: run "
    "the tests in --tasks (no token) into --answers; post: post --answers; all: the three.",
)
@click.option("--tasks", type=click.Path(dir_okay=False, path_type=Path), help="Tasks JSON.")
@click.option("--answers", type=click.Path(dir_okay=False, path_type=Path), help="Answers JSON.")
@click.option("--issue", type=click.IntRange(min=1), help="Only this issue's comments.")
@click.option(
    "--event",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="An issue_comment event's payload ($GITHUB_EVENT_PATH): only its issue's comments.",
)
@click.option(
    "--max-runs",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Tests run per pass; a request over it is answered so.",
)
@click.option("--repo", "repo_name", metavar="OWNER/NAME", help="Repository artbot files in.")
@click.option("--api-url", metavar="URL", help="GitHub API URL.")
@click.option("--cache", type=click.Path(dir_okay=False, path_type=Path), help="ETag cache file.")
@click.option(
    "--budget-s",
    type=click.FloatRange(min=1),
    help="check: the whole run's time; each test gets an equal share of what is left, and one "
    'that runs over it is answered "timed out".',
)
@click.pass_obj
def answer_tests(
    obj: Context,
    phase: str,
    tasks: Path | None,
    answers: Path | None,
    issue: int | None,
    event: Path | None,
    max_runs: int,
    repo_name: str | None,
    api_url: str | None,
    cache: Path | None,
    budget_s: float | None,
) -> None:
    """Read the `/artbot test` comments on the issues artbot filed and answer each once: only
    a writer's (permission looked up; unknown is none), never a bot's or artbot's own; an
    edited comment is a new request; a repeated one gets a link to the earlier answer. The
    record of what was answered is artbot's own comments (a hidden marker in each)."""
    from ..patchtest import respond
    from ..patchtest.handover import load_answers
    from .github import connect

    if phase in ("all", "check"):  # the phases that run the checks
        from ..extras import require

        require("answer-tests")
    catalog = obj.catalog()
    if event is not None:
        issue = respond.event_issue(event)
    if phase in ("read", "check") and tasks is None or phase in ("check", "post") and not answers:
        raise click.UsageError(f"--phase {phase} needs --tasks and/or --answers files")
    repo: Any = None
    if phase in ("all", "read", "post"):
        repo = connect(obj, catalog, repo_name, api_url, cache, dry_run=False)
    artbot = respond.artbot_logins(catalog.audit.login)  # configured, never inferred
    if phase in ("all", "read"):
        planned = respond.read_requests(repo, catalog, artbot, issue=issue, max_runs=max_runs)
        click.echo(f"answer-tests: {len(planned)} request(s) to answer", err=True)
        if tasks is not None:
            respond.dump(planned, tasks)
    if phase == "check":
        assert tasks is not None
        planned = respond.load_tasks(tasks)
    if phase in ("all", "check"):
        so_far: list[respond.Answer] = []

        def write(answer: respond.Answer) -> None:  # one by one: a killed job keeps them
            so_far.append(answer)
            if answers is not None:
                respond.dump(so_far, answers)

        done = respond.check_tasks(
            catalog,
            planned,
            cache=obj.settings.wheel_cache,
            secrets=obj.settings.secrets,
            progress=lambda line: click.echo(line, err=True),
            budget_s=budget_s,
            on_answer=write,
        )
        if answers is not None:
            respond.dump(done, answers)
    if phase == "post":
        assert answers is not None
        done = load_answers(answers, say=lambda line: click.echo(line, err=True))
    if phase in ("all", "post"):
        say = lambda line: click.echo(line, err=True)  # noqa: E731
        posted = respond.post_answers(repo, catalog, done, artbot, say=say)
        for url in posted:
            click.echo(f"answered: {url}")
