"""Benchmarks (``make bench``): requests per operation against the sandbox, and CLI start-up.

Counts come from the sandbox's request log, so they are exact and repeatable. The naive
approach (one GET per known issue, then read and write the tracking issue) is measured on the
same state for comparison. Start-up is measured as a ratio, ``artbot --help`` against
``python -c "import click"``, in one run: printed, never asserted (timed tests are flaky;
tests/cli/test_version.py guards what ``--help`` loads instead).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from artbot.github.client import EtagCache, GitHubRepo
from artbot.records.catalog import load_catalog
from artbot.run.commands import open_issues, sync
from artbot.sandbox import GitHubSandbox

REPO = Path(__file__).resolve().parents[1]
OWNER, NAME = "OpenPipe", "ART"
TRACKING = 1111
TARGETS = {
    # The first run: the list, the tracking issue (not labelled yet), the labels the issue
    # uses, the create (and the close of a fixed item), the list again (copies), the
    # sub-issue add (whose answer is the tracking issue, read again) and the block write.
    "open --item 7 (first run)": "<= 12 requests",
    # Steady: the list and the tracking issue (open does not label it), nothing to write.
    "open --item 7 again": "2 requests, 0 writes",
    # The tracking issue comes with the labelled list (pre-flight needs no request) and is
    # read once, fresh, right before the checklist is written; one POST makes the new issue
    # its sub-issue.
    "open --item N": "<= 6 requests",
    # One conditional list: the tracking issue carries the audit's labels (sync adds them).
    "sync, no change": "1 request, 0 writes",
    "sync of 11 after 3 state changes": "<= 3 requests",
    # The list of sub-issues is read once (the summary changed); the checklist notes it.
    "sync after a person removes a sub-issue": "1 write",
    "sync again": "1 request, 0 writes",
}
HELP_TARGET = 0.15  # `artbot --help` adds at most 15 % to `python -c "import click"`
RENDER_TARGET_S = 0.25  # `artbot render --all` adds at most 0.25 s to importing what it uses


def checkout() -> Path:
    """A scratch copy of the catalog (without captured results), so runs write nothing here."""
    root = Path(tempfile.mkdtemp()) / "checkout"
    for part in ("findings", "templates", "repros"):
        shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("results"))
    return root


def seed_art(sb: GitHubSandbox, root: Path) -> None:
    """ART as the audit left it: #1108-#1110 filed by hand, then the tracking issue."""
    sb.create_repo(OWNER, NAME)
    for n in (1108, 1109, 1110):
        sb.seed_issue(OWNER, NAME, f"dedicated issue {n}", "by hand", number=n)
    body = (root / "findings" / "tracking-issue.md").read_text(encoding="utf-8")
    sb.seed_issue(OWNER, NAME, "Tracking: numerics audit", body, number=TRACKING)


def measure(sandbox: GitHubSandbox, fn: Callable[[], object]) -> tuple[int, int, int]:
    """(requests, writes, 304s) made by ``fn``."""
    sandbox.requests.clear()
    fn()
    log = sandbox.requests.snapshot()
    return (len(log), sum(r.method != "GET" for r in log), sum(r.status == 304 for r in log))


def status_rows() -> list[tuple[str, tuple[int, int, int], str]]:
    """Filing by status, on hand-written status records (tests/helpers/statusdata.py): the request
    counts depend on the decisions, not on what the verdicts were measured from."""
    from artbot.status import ItemStatus
    from tests.helpers.statusdata import F, claims_of, fixed_item, install, partial_item, point

    root = checkout()
    for item, build in ((7, fixed_item), (9, partial_item)):
        install(root, load_catalog(root).get(item), build(load_catalog(root).get(item)))
    catalog = load_catalog(root)
    rows: list[tuple[str, tuple[int, int, int], str]] = []
    with GitHubSandbox() as sb:
        seed_art(sb, root)
        repo = GitHubRepo(f"{OWNER}/{NAME}", api_url=sb.api_url, token="bench", cache=EtagCache())
        open_issues(catalog, repo, [4], TRACKING)  # labels exist from here on
        sync(catalog, repo, TRACKING)  # and #1108-#1110 carry them
        rows.append(
            (
                "open --item 7, fixed (create, then close as completed)",
                measure(sb, lambda: open_issues(catalog, repo, [7], TRACKING)),
                "",
            )
        )
        open_issues(catalog, repo, [9], TRACKING)
        sync(catalog, repo, TRACKING)
        nine = catalog.get(9)
        ids = [c.id for c in claims_of(nine)]
        fixed = point("release", "0.5.24", dict.fromkeys(ids, F))
        install(root, nine, ItemStatus(item=9, points=[*partial_item(nine).points, fixed]))
        changed = load_catalog(root)
        rows.append(
            (
                "sync after one status change (comment, body, checklist)",
                measure(sb, lambda: sync(changed, repo, TRACKING)),
                "",
            )
        )
    return rows


def request_rows() -> list[tuple[str, tuple[int, int, int], str]]:
    """Requests by checkbox: what a ticked "File the issue for item 4" costs on the edit path
    (the owner's tick, carried out; a reader's, reverted) and on the scheduled path (cleared)."""
    from artbot.cli.demo import tick_request

    root = checkout()
    catalog = load_catalog(root)
    rows: list[tuple[str, tuple[int, int, int], str]] = []
    with GitHubSandbox() as sb:
        seed_art(sb, root)
        repo = GitHubRepo(f"{OWNER}/{NAME}", api_url=sb.api_url, token="bench", cache=EtagCache())
        open_issues(catalog, repo, [5], TRACKING)  # labels exist from here on
        sync(catalog, repo, TRACKING)
        owner = tick_request(sb, catalog, TRACKING, "file=4")  # the owner's edit: admin
        rows.append(
            (
                "edit path: the owner ticks 'File the issue for item 4' (files it, clears the box)",
                measure(sb, lambda: sync(catalog, repo, TRACKING, event=owner)),
                "",
            )
        )
        rows.append(("sync after it", measure(sb, lambda: sync(catalog, repo, TRACKING)), ""))
        tick_request(sb, catalog, TRACKING, "file=7")
        rows.append(
            (
                "scheduled sync with a tick no edit event names (cleared with a note)",
                measure(sb, lambda: sync(catalog, repo, TRACKING)),
                "0 creates",
            )
        )
        event = tick_request(sb, catalog, TRACKING, "file=6", sender="someone")  # a reader
        rows.append(
            (
                "edit path: a tick by a sender without write access (reverted)",
                measure(sb, lambda: sync(catalog, repo, TRACKING, event=event)),
                "0 creates",
            )
        )
    return rows


def child_cpu_seconds(command: list[str], env: dict[str, str]) -> float:
    """CPU time (user + system) that running ``command`` to the end takes."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, capture_output=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def interleaved_pairs(
    base: list[str], measured: list[str], env: dict[str, str], pairs: int
) -> tuple[list[float], list[float]]:
    """CPU seconds of ``base`` and of ``measured``, run in ``pairs`` interleaved pairs
    (alternating which goes first, so a busy machine slows both halves of a pair alike), after
    one warm-up run of each (which writes the bytecode, as an installed artbot has it)."""
    for command in (base, measured):
        child_cpu_seconds(command, env)
    base_s, measured_s = [], []
    for n in range(pairs):
        order = (base, measured) if n % 2 == 0 else (measured, base)
        times = {tuple(c): child_cpu_seconds(c, env) for c in order}
        base_s.append(times[tuple(base)])
        measured_s.append(times[tuple(measured)])
    return base_s, measured_s


def help_startup(pairs: int = 31) -> tuple[float, float, float]:
    """``artbot --help`` against ``python -c "import click"``, same interpreter:
    (median ms of each, median of the per-pair ratios).

    CPU time rather than wall clock, and runs in interleaved pairs (alternating which goes
    first), so a busy machine slows both halves of a pair alike. Bytecode is written by a
    first run of each, as an installed artbot has it.
    """
    artbot = str(Path(sys.executable).with_name("artbot"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    click_s, help_s = interleaved_pairs(
        [sys.executable, "-c", "import click"], [artbot, "--help"], env, pairs
    )
    ratio = statistics.median(h / c for h, c in zip(help_s, click_s, strict=True))
    return statistics.median(help_s) * 1000, statistics.median(click_s) * 1000, ratio


_MODULES_OF = """
import json, sys
from artbot.cli import main
sys.argv = ["artbot", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
sys.stdout = sys.__stdout__
print(json.dumps(list(sys.modules)))
"""


def render_cost(pairs: int = 15) -> tuple[float, float, float]:
    """``artbot render --all`` against importing the modules it loads, same interpreter:
    (median s of each, median of the per-pair differences), CPU time in interleaved pairs.

    The modules are those ``render --all`` itself leaves in ``sys.modules``, so the difference
    is what rendering costs beyond importing: loading the catalog, compiling the templates
    once, rendering every item and writing the files.
    """
    out = Path(tempfile.mkdtemp())
    args = ["--root", str(REPO), "render", "--all", "--out", str(out)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    probe = subprocess.run(
        [sys.executable, "-c", _MODULES_OF, *args],
        check=True, capture_output=True, text=True, env=env,
    )  # fmt: skip
    loaded = [m for m in json.loads(probe.stdout.splitlines()[-1]) if m != "__main__"]
    imports = (
        "import importlib\n"
        f"for name in {loaded!r}:\n"
        "    try:\n        importlib.import_module(name)\n    except Exception:\n        pass\n"
    )
    artbot = str(Path(sys.executable).with_name("artbot"))
    import_s, render_s = interleaved_pairs(
        [sys.executable, "-c", imports], [artbot, *args], env, pairs
    )
    shutil.rmtree(out, ignore_errors=True)
    added = statistics.median(r - i for r, i in zip(render_s, import_s, strict=True))
    return statistics.median(render_s), statistics.median(import_s), added


def sub_issue_rows(catalog: Any) -> list[tuple[str, tuple[int, int, int], str]]:
    """On a GitHub without sub-issues (no ``sub_issues_summary``), they cost nothing."""
    with GitHubSandbox(sub_issues=False) as sb:
        sb.create_repo(OWNER, NAME)
        for n in (1108, 1109, 1110):
            sb.seed_issue(OWNER, NAME, f"dedicated issue {n}", "by hand", number=n)
        body = (catalog.root / "findings" / "tracking-issue.md").read_text(encoding="utf-8")
        sb.seed_issue(OWNER, NAME, "Tracking: numerics audit", body, number=TRACKING)
        repo = GitHubRepo(f"{OWNER}/{NAME}", api_url=sb.api_url, token="b", cache=EtagCache())
        open_issues(catalog, repo, [4], TRACKING)  # labels exist from here on
        sync(catalog, repo, TRACKING)
        return [
            (
                "open --item N, a GitHub without sub-issues",
                measure(sb, lambda: open_issues(catalog, repo, [5], TRACKING)),
                "",
            ),
            (
                "sync, no change, without sub-issues",
                measure(sb, lambda: sync(catalog, repo, TRACKING)),
                "",
            ),
        ]


def main() -> int:
    root = checkout()
    catalog = load_catalog(root)
    rows: list[tuple[str, tuple[int, int, int], str]] = []
    with GitHubSandbox() as sb:
        seed_art(sb, root)
        cache = EtagCache()
        repo = GitHubRepo(f"{OWNER}/{NAME}", api_url=sb.api_url, token="bench", cache=cache)

        for name in ("open --item 7 (first run)", "open --item 7 again"):
            rows.append(
                (
                    name,
                    measure(sb, lambda: open_issues(catalog, repo, [7], TRACKING)),
                    TARGETS[name],
                )
            )
        rows.append(
            (
                "sync (first: labels #1108-#1110 and makes them sub-issues, once)",
                measure(sb, lambda: sync(catalog, repo, TRACKING)),
                "",
            )
        )
        rows.append(
            (
                "open --item N",
                measure(sb, lambda: open_issues(catalog, repo, [5], TRACKING)),
                TARGETS["open --item N"],
            )
        )
        open_issues(catalog, repo, catalog.items, TRACKING)
        sync(catalog, repo, TRACKING)
        rows.append(
            (
                "sync, no change",
                measure(sb, lambda: sync(catalog, repo, TRACKING)),
                TARGETS["sync, no change"],
            )
        )
        ours = sync(catalog, repo, TRACKING, dry_run=True).issues
        for item, reason in ((4, "completed"), (6, "not_planned"), (9, "completed")):
            sb.edit_issue(OWNER, NAME, ours[item].number, state="closed", state_reason=reason)
        rows.append(
            (
                "sync of 11 after 3 state changes",
                measure(sb, lambda: sync(catalog, repo, TRACKING)),
                TARGETS["sync of 11 after 3 state changes"],
            )
        )

        def naive() -> None:
            # What a bot without a marker list or ETags does: fetch every issue it knows of.
            plain = repo._gh.get_repo(f"{OWNER}/{NAME}")  # PyGithub itself, lazily: no request
            for number in [*(1108, 1109, 1110), *(i.number for i in ours.values())]:
                plain.get_issue(number).title  # noqa: B018 - forces the GET
            tracking = plain.get_issue(TRACKING)
            tracking.edit(body=tracking.body)

        for item, reason in ((5, "completed"), (8, "not_planned"), (10, "completed")):
            sb.edit_issue(OWNER, NAME, ours[item].number, state="closed", state_reason=reason)
        rows.append(
            ("naive: one GET per issue + tracking read/write", measure(sb, naive), "(comparison)")
        )
        sync(catalog, repo, TRACKING)
        sb.remove_sub_issue(OWNER, NAME, TRACKING, ours[6].number)
        for name in ("sync after a person removes a sub-issue", "sync again"):
            rows.append((name, measure(sb, lambda: sync(catalog, repo, TRACKING)), TARGETS[name]))
    rows += sub_issue_rows(catalog)

    rows += status_rows()
    rows += request_rows()

    print("| operation | requests | writes | 304s | target |")
    print("|---|---:|---:|---:|---|")
    for name, (req, wr, nm), target in rows:
        print(f"| {name} | {req} | {wr} | {nm} | {target} |")

    help_ms, click_ms, ratio = help_startup()
    print()
    print("| start-up (CPU time; medians of 31 pairs) | ms | ratio to import click | target |")
    print("|---|---:|---:|---|")
    print(f'| `python -c "import click"` | {click_ms:.0f} | 1 | |')
    print(f"| `artbot --help` | {help_ms:.0f} | {ratio:.3f} | <= {1 + HELP_TARGET:.2f} |")

    render_s, import_s, added = render_cost()
    print()
    print("| render (CPU time; medians of 15 pairs) | s | added to the imports | target |")
    print("|---|---:|---:|---|")
    print(f"| importing what `render --all` loads | {import_s:.3f} | | |")
    print(f"| `artbot render --all` | {render_s:.3f} | {added:.3f} | <= {RENDER_TARGET_S:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
