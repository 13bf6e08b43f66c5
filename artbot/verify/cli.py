"""``artbot verify``: check the findings against real ART code; thin, the work is in the package."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

# What --fail-on can add to the exit code (a check that could not run always fails).
FAIL_ON = ("reproduced", "moved")


def _source_options(f: F) -> F:
    """--art-src DIR or --release VERSION, and --json, for the verify subcommands."""
    options = [
        click.option(
            "--art-src",
            type=click.Path(exists=True, file_okay=False, path_type=Path, resolve_path=True),
            help="An ART git checkout, an unpacked openpipe-art wheel, or its art/ folder.",
        ),
        click.option(
            "--release",
            metavar="VERSION",
            help="Check openpipe-art==VERSION, or `latest` (wheel fetched with pip, cached).",
        ),
        click.option("--json", "as_json", is_flag=True, help="Print JSON."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


SEED_HELP = (
    "Draw the checks' inputs with this seed (to repeat a run); by default a secret one, said "
    "after the run."
)
_seed_option = click.option("--seed", type=click.IntRange(min=0), metavar="N", help=SEED_HELP)


def _catalog(ctx: click.Context, *, record: bool = False) -> Any:
    """The catalog; ``record``: the one a record is written into (the user's copy of the
    records installed with artbot, never the package itself: Context.for_recording)."""
    obj = ctx.find_root().obj
    if record:
        obj.for_recording()
    return obj.catalog()


def _resolve(release: str) -> str:
    from .release import resolve

    version = resolve(release)
    if release == "latest":
        click.echo(f"verify: the newest openpipe-art release is {version}", err=True)
    return version


def _progress(quiet: bool) -> Callable[[str], None] | None:
    """One line on stderr per download and per check, as they run; none with --json."""
    return None if quiet else (lambda line: click.echo(line, err=True))


def _tree(catalog: Any, art_src: Path | None, release: str | None, quiet: bool = False) -> Any:
    import tempfile

    from .release import recorded_pin, release_tree
    from .tree import open_tree

    if (art_src is None) == (release is None):
        raise click.UsageError("give exactly one of --art-src DIR or --release VERSION")
    if art_src is not None:
        return open_tree(art_src, catalog.audit)
    assert release is not None
    ctx = click.get_current_context()
    settings = ctx.find_root().obj.settings
    version = _resolve(release)
    # Unpacked afresh for this run, removed after it: never read from the cache.
    into = Path(ctx.with_resource(tempfile.TemporaryDirectory(prefix="artbot-release-")))
    return release_tree(
        version,
        catalog.audit,
        settings.wheel_cache,
        progress=_progress(quiet),
        pin=recorded_pin(catalog.root, version),
        into=into,
    )


def _verify_code(
    ctx: click.Context, catalog: Any, tree: Any, quiet: bool, seed: int | None = None
) -> tuple[Any, str]:
    """The code checks, in a confined child process that holds no token (the wheel is
    untrusted), on inputs artbot draws with ``seed`` and judged by artbot; (results, the line
    that says which isolation the child got)."""
    from .apart import verify_code_apart
    from .rejudge import judged_line

    said: list[str] = []

    def say(line: str) -> None:
        said.append(line)
        if not quiet:
            click.echo(line, err=True)

    results = verify_code_apart(
        catalog, tree, secrets=ctx.find_root().obj.settings.secrets, say=say, seed=seed
    )
    isolation = " ".join(said).removeprefix("verify: ")
    if line := judged_line(results):
        say(f"verify: {line}")
    return results, isolation


def _wants_json(ctx: click.Context, as_json: bool) -> bool:
    """--json after the subcommand, or before it (on the group)."""
    return as_json or bool(ctx.parent and ctx.parent.params.get("as_json"))


def _emit(
    ctx: click.Context, as_json: bool, data: Any, table: Callable[[], str], *, ok: bool
) -> None:
    if _wants_json(ctx, as_json):
        import json

        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        click.echo(table())
    ctx.exit(0 if ok else 1)


def _main_label(art_src: Path) -> str:
    """``main@<sha>`` for a git checkout (its HEAD read from its files, no git run), else the
    folder's name."""
    from .gitread import head_commit

    head = head_commit(art_src)
    return f"main@{head[:9]}" if head else art_src.absolute().name


@click.group(
    invoke_without_command=True,
)
@click.option(
    "--release", metavar="VERSION", help="Run both checks on openpipe-art==VERSION, or `latest`."
)
@click.option(
    "--art-src",
    type=click.Path(exists=True, file_okay=False, path_type=Path, resolve_path=True),
    help="Run both checks on a checkout of ART's main (recorded as the `main` point).",
)
@click.option(
    "--record", is_flag=True, help="Write the per-claim results into findings/status/NN.json."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_seed_option
@click.option(
    "--fail-on",
    "fail_on",
    type=click.Choice(FAIL_ON),
    multiple=True,
    help="Also exit 1 when a finding is still reproduced (or partly), or a cited line moved.",
)
@click.pass_context
def verify(
    ctx: click.Context,
    release: str | None,
    art_src: Path | None,
    record: bool,
    as_json: bool,
    seed: int | None,
    fail_on: tuple[str, ...],
) -> None:
    """Check the findings against real ART code, claim by claim: the cited lines, and each
    finding's own check (beside its repro) run on ART's functions.

    `artbot verify --release latest --record` resolves the newest openpipe-art release, checks
    it, and records the result per claim in findings/status/ (rendering then stays offline).
    Wheels are kept in $ARTBOT_CACHE_DIR (default ~/.cache/artbot/wheels), each checked against
    the sha256 recorded in findings/status/, else the index's, and unpacked afresh. ART's code
    runs confined (own namespaces; a read-only root holding only the tree's packages, artbot and
    Python, and a 256 MB scratch folder; no new namespace or mount: seccomp) and capped (4 GB
    of memory and 300 s of CPU per process, 64 MB a file, 256 processes; each named when
    hit); its output is never kept and its text is sanitized.
    verify says which protections it had; where one is missing it refuses while a token is set
    (exit 2). A wheel is checked entry by entry before it is unpacked; git reads a checkout's
    objects only.

    Exit 0 when every check ran, whatever it found (moved or missing lines are information);
    1 when a check could not run. `--fail-on reproduced` also exits 1 while a finding is
    reproduced or partly reproduced (a CI that wants to fail while a bug remains);
    `--fail-on moved` while a cited location is not at its lines.
    """
    from .apart import not_dumpable

    not_dumpable()  # before any child (pip, git, the check): nothing of the user reads it
    if ctx.invoked_subcommand is not None:
        if release or art_src or record or seed is not None:
            raise click.UsageError("put --release / --art-src / --seed after the subcommand")
        return
    if (release is None) == (art_src is None):
        raise click.UsageError("give --release VERSION (or latest), --art-src DIR, or a subcommand")
    from ..extras import require

    require("verify")  # before anything is fetched: one line naming the extra
    from .anchors import anchors_json, verify_anchors
    from .code import code_json

    catalog = _catalog(ctx, record=record)
    tree = _tree(catalog, art_src, release, as_json)
    anchors = verify_anchors(catalog, tree)
    code, isolation = _verify_code(ctx, catalog, tree, as_json, seed)
    if as_json:
        import json

        data = {
            "source": tree.label,
            "isolation": isolation,
            "anchors": anchors_json(anchors, tree),
            "code": code_json(code, tree),
        }
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        from .anchors import anchor_table
        from .code import code_table

        click.echo(anchor_table(catalog, anchors, tree))
        click.echo()
        click.echo(code_table(code, tree))
    if record:
        label = (
            tree.label.removeprefix("openpipe-art ") if art_src is None else _main_label(art_src)
        )
        source = "release" if art_src is None else "main"
        written = _record(catalog, label, source, code, anchors, tree.sha256)
        if art_src is None:
            from .record import anchors_record

            written.append(anchors_record(catalog.root, catalog.audit, label, anchors))
        folder = written[0].parent if written else catalog.root
        click.echo(f"recorded {label} in {len(written)} status files in {folder}", err=True)
    reasons = exit_reasons(
        ran=code_json(code, tree)["ran"],
        remaining=[r.item for r in code if r.status.value in ("reproduced", "partial")],
        anchors_ok=anchors_json(anchors, tree)["ok"],
        fail_on=fail_on,
    )
    for reason in reasons:
        click.echo(f"verify: exit 1: {reason}", err=True)
    ctx.exit(1 if reasons else 0)


def exit_reasons(
    *, ran: bool, remaining: list[int], anchors_ok: bool, fail_on: tuple[str, ...]
) -> list[str]:
    """Why ``artbot verify`` exits 1 (none: exit 0). A check that could not run always
    counts; what the checks found counts only when asked for with ``--fail-on``."""
    reasons = [] if ran else ["a check could not run"]
    if "reproduced" in fail_on and remaining:
        items = ", ".join(str(n) for n in remaining)
        reasons.append(f"--fail-on reproduced: still reproduced, in full or in part: item {items}")
    if "moved" in fail_on and not anchors_ok:
        reasons.append("--fail-on moved: a cited location is not at its lines")
    return reasons


def _record(
    catalog: Any, label: str, source: Any, code: Any, anchors: Any, sha256: str | None = None
) -> list[Path]:
    from ..status import dump_status, load_status, status_path
    from .record import audit_point, record_status, release_point

    by_item = {r.item: r for r in code}
    written = []
    for finding in catalog.findings:
        point = release_point(finding, label, by_item.get(finding.item), anchors, source=source)
        if sha256:  # which wheel was checked, byte for byte
            point = point.model_copy(update={"wheel_sha256": sha256})
        audit = audit_point(finding, catalog.audit, catalog.root)
        existing = load_status(catalog.root, finding.item)
        status = record_status(finding.item, existing, audit, point)
        path = status_path(catalog.root, finding.item)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump_status(status), encoding="utf-8")
        written.append(path)
    return written


@verify.command(name="anchors", short_help="Does every cited range still hold its anchor line?")
@_source_options
@click.option(
    "--record",
    is_flag=True,
    help="With --release: record how many anchors sit at the audit's lines there "
    "(findings/status/anchors.json), which dates the audit commit among the releases.",
)
@click.pass_context
def anchors_cmd(
    ctx: click.Context, art_src: Path | None, release: str | None, as_json: bool, record: bool
) -> None:
    """Does every cited range still hold its anchor line? Exit 1 unless all are ok.

    Status per location: ok, moved (with the range that holds the anchor now), missing (file
    absent or anchor nowhere), out of range, no anchor (cannot be checked; not a failure).
    A git checkout is read at the audit commit (`git show`), else its working tree.
    """
    from .anchors import anchor_table, anchors_json, verify_anchors

    if record and release is None:
        raise click.UsageError("--record needs --release: the record is per release")
    catalog = _catalog(ctx, record=record)
    tree = _tree(catalog, art_src, release, _wants_json(ctx, as_json))
    results = verify_anchors(catalog, tree)
    data = anchors_json(results, tree)
    if record:
        from .record import anchors_record

        label = tree.label.removeprefix("openpipe-art ")
        path = anchors_record(catalog.root, catalog.audit, label, results)
        click.echo(f"recorded the anchors at {label} in {path}", err=True)
    _emit(ctx, as_json, data, lambda: anchor_table(catalog, results, tree), ok=data["ok"])


@verify.command(name="code", short_help="Run each finding's check_art on ART's functions.")
@_source_options
@_seed_option
@click.pass_context
def code_cmd(
    ctx: click.Context, art_src: Path | None, release: str | None, as_json: bool, seed: int | None
) -> None:
    """Run each finding's check_art (defined beside its repro) on ART's code from that tree.

    Per item and per claim: reproduced, fixed, not checked; the item's verdict is derived
    (reproduced, partial, fixed), or could not run (with the missing import or the error).
    ART's modules are imported file by file; package __init__ files are not run. Needs torch.
    Exit 1 when a check could not run.
    """
    from ..extras import require
    from .code import code_json, code_table

    require("verify")
    catalog = _catalog(ctx)
    quiet = _wants_json(ctx, as_json)
    tree = _tree(catalog, art_src, release, quiet)
    results, isolation = _verify_code(ctx, catalog, tree, quiet, seed)
    data = {**code_json(results, tree), "isolation": isolation}
    _emit(ctx, as_json, data, lambda: code_table(results, tree), ok=data["ran"])


@verify.command(name="changes", short_help="Ask GitHub which commit made each recorded fix.")
@click.option("--record", is_flag=True, help="Write the changes found into findings/status/.")
@click.option("--refresh", is_flag=True, help="Look up changes already recorded again.")
@click.option("--api-url", metavar="URL", help="GitHub's API root (default $GITHUB_API_URL).")
@click.pass_context
def changes_cmd(ctx: click.Context, record: bool, refresh: bool, api_url: str | None) -> None:
    """Ask GitHub which commit (and pull request) made each recorded fix.

    For every claim fixed in a release, with its fixing lines recorded by `verify --record`:
    the commits between the audit commit and the release's tag (v0.5.21, else 0.5.21) that
    touch the fixing file, and of those the one whose patch adds the line to look for. No
    such tag, or no single such commit: the change is recorded as not identified, saying why.
    Reads only (a token raises the rate limit; none is needed); runs no ART code.
    """
    from ..github.changes import record_changes
    from ..github.client import connect
    from ..records.root import default_cache_path
    from ..status import dump_status, load_status, status_path

    obj = ctx.find_root().obj
    catalog = _catalog(ctx, record=record)
    repo = connect(
        obj.settings,
        catalog.audit.repository,
        repo_name=catalog.audit.repository,
        api_url=api_url,
        cache_path=default_cache_path(catalog.root),
        dry_run=True,
    )

    def read(endpoint: str, params: dict[str, Any] | None) -> Any:
        return repo.read_upstream(catalog.audit.repository, endpoint, params)

    changed = []  # recorded once every lookup is done: a failed run records nothing
    for finding in catalog.findings:
        status = load_status(catalog.root, finding.item)
        if status is None:
            continue
        updated, lines = record_changes(status, catalog.audit, read, refresh=refresh)
        for line in lines:
            click.echo(line)
        if record and updated != status:
            changed.append((status_path(catalog.root, finding.item), updated))
    for path, updated in changed:
        path.write_text(dump_status(updated), encoding="utf-8")
    if changed:
        folder = changed[0][0].parent
        click.echo(f"recorded the changes in {len(changed)} status files in {folder}", err=True)
    repo.cache.save()
