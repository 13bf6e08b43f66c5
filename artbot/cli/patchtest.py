"""``artbot test`` (a patch on one item, at a terminal) and ``artbot answer-tests`` (the
``/artbot test`` comments on artbot's issues, answered); thin, the work is in
:mod:`artbot.patchtest`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from .context import Context


@click.command("test", short_help="Try a patch of ART's on one item: the verdict before and after.")
@click.option("--item", type=int, required=True, help="The audit item or follow-up to check.")
@click.option(
    "--patch",
    "patch_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="A unified diff as `git diff` prints it in ART's repository (a/src/art/...).",
)
@click.option(
    "--release",
    metavar="VERSION",
    help="The openpipe-art release to apply it to [default: the newest in findings/status/].",
)
@click.pass_obj
def test(obj: Context, item: int, patch_file: Path, release: str | None) -> None:
    """Apply a patch to a release's code (pure Python, only under src/art/), run the item's
    check and its regression test on the release and on the patched copy, confined and without
    a token, and print the answer artbot would post for `/artbot test`. Exit 0 when the patch
    fixes the item, 1 when it does not (or a check could not run), 2 when it was refused."""
    from ..patchtest.answer import render_refusal, render_trial
    from ..patchtest.command import Refusal, checked_diff
    from ..patchtest.trial import newest_checked, run_trial
    from ..verify.code import CodeStatus

    catalog = obj.catalog()
    catalog.get(item)  # an unknown item is a usage error, before anything runs
    text = patch_file.read_text(encoding="utf-8", errors="replace")
    version = release or newest_checked(catalog.root)
    parsed = checked_diff(text, version)
    if isinstance(parsed, Refusal):
        click.echo(render_refusal(parsed))
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
    )
    if isinstance(outcome, Refusal):
        click.echo(render_refusal(outcome))
        raise SystemExit(2)
    click.echo(render_trial(outcome), nl=False)
    raise SystemExit(0 if outcome.after.status is CodeStatus.fixed else 1)
