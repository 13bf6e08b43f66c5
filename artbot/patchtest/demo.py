"""``make demo``'s `/artbot test` round trip, on its own embedded sandbox: a writer comments a
fix for follow-up 801 (artbot's suggested fix, from ``repros/controls/item801.toml``, written as
``git diff`` would print it against the release), a reader comments the same; one pass of the
responder answers the writer, "fixed", and not the reader.

The fix needs the release's wheel (the cache, else pip); without it the round trip is skipped,
said in one line. The check runs as ``artbot test`` runs it: confined, without a token.
"""

from __future__ import annotations

import difflib
import re
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path

from ..errors import ArtbotError
from ..github.client import EtagCache, GitHubRepo
from ..records.catalog import Catalog
from ..records.marker import BODY_END, BODY_START, IssueMarker
from ..sandbox import GitHubSandbox
from ..verify.release import recorded_pin, release_tree
from . import respond
from .trial import newest_checked

ITEM = 801
WRITER, READER = "maintainer", "passerby"
TOKEN = "sandbox-demo-token"  # the sandbox takes any token; this one stands in


def fix_diff(
    catalog: Catalog,
    release: str,
    into: Path,
    cache: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> str:
    """The control's fix of item 801 on ``release``, as ``git diff`` prints it; ``progress``
    hears whether the wheel came from the cache or was downloaded."""
    toml = catalog.root / "repros" / "controls" / f"item{ITEM}.toml"
    control = tomllib.loads(toml.read_text(encoding="utf-8"))  # read as data: nothing runs
    edits = [
        (e["files"], e["find"], e["replace"])
        for e in control["fix"]
        if release in e.get("releases", [release])
    ]
    pin = recorded_pin(catalog.root, release)
    tree = release_tree(release, catalog.audit, cache, pin=pin, into=into, progress=progress)
    out = []
    for glob, find, replace in edits:
        for file in sorted(tree.package_dir.glob(glob)):
            old = file.read_text(encoding="utf-8")
            new = re.sub(find, replace, old, flags=re.M)
            path = "src/art/" + file.relative_to(tree.package_dir).as_posix()
            lines = difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True),
                f"a/{path}", f"b/{path}",
            )  # fmt: skip
            out.append(f"diff --git a/{path} b/{path}\n" + "".join(lines))
    return "".join(out)


def round_trip(
    catalog: Catalog, log: Callable[[str], None] = print, cache: Path | None = None
) -> None:
    """The round trip, told through ``log``; the wheel comes from ``cache`` (the wheel cache),
    else pip downloads it, which the log says."""
    release = newest_checked(catalog.root)
    log(f"\n=== /artbot test: a writer tries a fix of item {ITEM} on openpipe-art {release}")
    log(
        f"(needs the openpipe-art {release} wheel: from the wheel cache, else downloaded with "
        "pip, the demo's one use of the network)"
    )
    with tempfile.TemporaryDirectory(prefix="artbot-demo-") as scratch:
        try:
            diff = fix_diff(catalog, release, Path(scratch), cache, progress=log)
        except ArtbotError as exc:
            log(f"(skipped: the release is not at hand: {exc})")
            return
    owner, name = catalog.audit.repository.split("/")
    with GitHubSandbox() as sandbox:
        sandbox.create_repo(owner, name)
        sandbox.set_permission(owner, name, WRITER, "write")
        body = f"{BODY_START}\n{IssueMarker(catalog.audit.commit, ITEM)}\n{BODY_END}\n"
        labels = list(catalog.audit.labels)
        issue = sandbox.seed_issue(owner, name, f"item {ITEM}", body, labels, user=sandbox.login)
        request = f"/artbot test {release}\n\n```diff\n{diff}```\n"
        sandbox.seed_comment(owner, name, issue, request, user=WRITER)
        sandbox.seed_comment(owner, name, issue, request, user=READER)
        log(f"(@{WRITER}, who can write, and @{READER}, who can only read, comment on #{issue}:)")
        log("\n".join(f"    {line}" for line in request.splitlines()[:12]) + "\n    ...")
        repo = GitHubRepo(catalog.audit.repository, api_url=sandbox.api_url, token=TOKEN,
                          cache=EtagCache())  # fmt: skip
        artbot = respond.artbot_logins(catalog.audit.login)
        log("\n$ artbot answer-tests")
        tasks = respond.read_requests(repo, catalog, artbot)
        try:
            answers = respond.check_tasks(catalog, tasks, cache=cache, progress=log)
        except ArtbotError as exc:  # ART's code cannot be confined here, and a token is set
            log(f"(the check did not run: {exc})")
            return
        posted = respond.post_answers(repo, catalog, answers, artbot, say=log)
        log(f"answered {len(posted)} of 2 requests (@{READER}'s: no write access, no answer)")
        for answer in answers:
            log(f"\n=== artbot's answer on #{answer.issue}\n")
            mine = [c for c in repo.list_comments(answer.issue) if "**artbot test**" in c["body"]]
            log(mine[-1]["body"].split("\n", 1)[1] if mine else "(none)")
