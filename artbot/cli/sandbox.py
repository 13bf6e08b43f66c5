"""``artbot demo`` and ``artbot sandbox``: the GitHub sandbox, embedded or in the foreground."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from .context import Context


@click.command()
@click.option(
    "--item",
    "items",
    type=int,
    multiple=True,
    help="Item to file (repeatable) [default: 7, 9 and 801; item 5 is then filed too, by the "
    "request the demo ticks].",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the new issues' bodies here (NN.md) instead of printing them after the result.",
)
@click.pass_obj
def demo(obj: Context, items: tuple[int, ...], out: Path | None) -> None:
    """Run the main job on the embedded GitHub sandbox (no token; GitHub is not contacted).

    Files items 7, 9 and 801 (artbot's follow-up to item 8) with `open`, syncs, ticks "File the
    issue for item 5" in the tracking issue as a maintainer would and syncs on that edit (which
    files it); then a `/artbot test` round trip, which needs the newest checked openpipe-art
    wheel (from the wheel cache, else downloaded with pip: the demo's one use of the network).
    Prints the issues' bodies (or writes them into --out), and ends with the result: the
    tracking issue's checklist, its sub-issues, the issues filed, the requests made.
    """
    from ..patchtest.demo import round_trip
    from .demo import DEMO_ITEMS, bodies, describe, run_demo

    catalog = obj.catalog(for_render=True)
    result = run_demo(catalog, items or DEMO_ITEMS, log=click.echo)
    round_trip(catalog, log=click.echo, cache=obj.settings.wheel_cache)
    if out is None:
        click.echo(bodies(result))
    else:
        out.mkdir(parents=True, exist_ok=True)
        for issue in result.issues:
            path = out / f"{issue.item:02d}.md"
            path.write_text(f"# {issue.title}\n\n{issue.body}", encoding="utf-8")
            click.echo(f"wrote {path}: issue #{issue.number}'s body")
    obj.note_unlinked(catalog)  # before the result, which is the last thing said
    click.echo(describe(result))


@click.command()
@click.option("--port", type=int, default=0, show_default=True, help="Port (0: any free one).")
@click.option(
    "--state",
    type=click.Path(dir_okay=False, path_type=Path),
    help="JSON file that keeps the sandbox's state across restarts.",
)
@click.option(
    "-R",
    "--repo",
    "repos",
    multiple=True,
    default=["OpenPipe/ART"],
    show_default=True,
    help="OWNER/NAME to create if missing (repeatable).",
)
@click.option(
    "--seed",
    is_flag=True,
    help="Seed the audited repository as the demo does (#1108-#1110 and the tracking issue) "
    "and print the lines to paste into another shell.",
)
@click.pass_obj
def sandbox(
    obj: Context, port: int, state: Path | None, repos: tuple[str, ...], seed: bool
) -> None:
    """Run the loopback GitHub API sandbox in the foreground."""
    from ..inputs import check_repository
    from ..sandbox import serve

    repos = tuple(check_repository(name) for name in repos)  # a URL too; a mistake is exit 2
    transcript = obj.settings.sandbox_transcript
    if not seed:
        serve(port, state, repos, transcript=transcript)
        return
    from .demo import paste_lines, seeded_already
    from .demo import seed as seed_sandbox

    catalog = obj.catalog()  # seeding renders no issue, so no repro link is missed
    program = how_artbot_was_run()

    def ready(box: Any) -> None:
        held = seeded_already(box, catalog)  # a restart with --state: seeded before
        number = held or seed_sandbox(box, catalog)
        click.echo(paste_lines(box.api_url, number, program, seeded=held is None))

    serve(port, state, repos, ready=ready, transcript=transcript)


def how_artbot_was_run(argv0: str | None = None) -> str:
    """The command to show for running artbot again from the current folder: ``artbot`` when
    that is on PATH and is this one, else the path this one was run by (``.venv/bin/artbot``
    from a checkout whose virtual environment is not active)."""
    import os
    import shutil
    import sys

    ran = Path(argv0 if argv0 is not None else sys.argv[0])
    if ran.name != "artbot":
        return "artbot"  # python -m artbot, or a test's runner: nothing better to show
    found = shutil.which("artbot")
    if found and Path(found).resolve() == ran.resolve():
        return "artbot"
    shown = os.path.relpath(os.path.abspath(ran))  # links kept: .venv may be one
    return shown if not shown.startswith("..") else os.path.abspath(ran)
