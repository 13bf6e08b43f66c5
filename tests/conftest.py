"""Shared fixtures: a local GitHub (see artbot.sandbox; with the faults, pull requests and commits
only tests need: tests/helpers/testsandbox.py) on a free port, fresh for each test, and
the openpipe-art release wheels (see tests/helpers/wheels.py: one cache folder per machine,
``$ARTBOT_CACHE_DIR`` or ``~/.cache/artbot/wheels``; under ``CI=true`` a missing wheel fails).

Every response a sandbox sends during a test, in this process or in an ``artbot sandbox``
process the test started, is checked against GitHub's published REST schema when the test ends
(tests/helpers/github_schema.py), and every request artbot sent must carry the API version and
GitHub's media type; a test that made the sandbox answer otherwise fails.

Hypothesis profiles: "ci" (the default) is derandomized, so a run's examples depend only on the
code; "nightly" (``HYPOTHESIS_PROFILE=nightly``, CI's scheduled run) draws fresh random ones.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from artbot.sandbox import GitHubSandbox, SentResponse, read_transcript
from artbot.settings import TRANSCRIPT_VARIABLE
from tests.helpers import action_harness
from tests.helpers.artrepo import NAME, OWNER, REPO, checkout_catalog, seed_audit
from tests.helpers.forkrun import ForkServer, RunScript
from tests.helpers.github_schema import SchemaCheck
from tests.helpers.testsandbox import TestSandbox
from tests.helpers.tiers import SLOW, in_slice
from tests.helpers.wheels import RELEASES, ArtWheels, default_wheels

# glibc hands every freed block over its mmap threshold (at most 32 MiB by default) back to the
# kernel, and faults it in again on the next allocation. The repros allocate and free tensors of
# tens of MiB chunk after chunk ([64, 151936] float64 in item 1): on this project's 2-core VM the
# page faults were 1.8 s of item 1's 3.9 s, all of it in the kernel. A higher threshold keeps
# freed memory in the process for reuse. glibc reads it when a process starts, so it is set here,
# before xdist starts its workers: they, the fork servers and every child inherit it. It changes
# no result, only where memory comes from; an environment that sets it keeps its own value.
os.environ.setdefault("MALLOC_MMAP_THRESHOLD_", str(4 << 30))

# xdist runs one worker per core, and each worker's torch (and every check, repro and exported
# test it starts) would otherwise use a thread per core as well: on the 2-core VM, four busy
# threads on two cores. One intra-op thread each took the whole suite from 262 s to 192 s of
# pytest, with every captured output and recorded verdict unchanged (tests/repros/ compares
# fresh runs with them). Set before the workers start, like the threshold above; an
# environment that sets its own keeps it.
for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

# Every property test runs under these settings and no others (no per-test @settings): no
# deadline, since a 2-core machine running the suite in parallel makes any per-example time limit
# flaky; HealthCheck.too_slow off for the same reason.
_COMMON = settings(deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", _COMMON, derandomize=True, database=None, max_examples=60)
settings.register_profile("nightly", _COMMON, derandomize=False, max_examples=300)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def _sandbox_transcript(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where ``artbot sandbox`` processes started by the tests write what they answered."""
    path = tmp_path_factory.mktemp("sandbox-transcript") / "responses.jsonl"
    os.environ[TRANSCRIPT_VARIABLE] = str(path)
    yield path
    os.environ.pop(TRANSCRIPT_VARIABLE, None)


@pytest.fixture(scope="session")
def _schema_check() -> SchemaCheck:
    return SchemaCheck()


@pytest.fixture(autouse=True)
def _the_sandbox_answers_as_github_does(
    _sandbox_transcript: Path, _schema_check: SchemaCheck
) -> Iterator[None]:
    """Every response sent while the test ran, checked against GitHub's published schema;
    every request artbot made (its User-Agent says so) carries the API version header and
    GitHub's JSON media type."""
    seen: list[SentResponse] = []
    GitHubSandbox.observers.append(seen.append)
    start = _sandbox_transcript.stat().st_size if _sandbox_transcript.exists() else 0
    yield
    GitHubSandbox.observers.remove(seen.append)
    elsewhere, _ = read_transcript(_sandbox_transcript, start)
    sent = seen + elsewhere
    found = _schema_check(sent) + sorted(set(_unversioned(sent)))
    if found:
        more = f"\n... and {len(found) - 20} more" if len(found) > 20 else ""
        shown = "\n".join(found[:20]) + more
        pytest.fail(f"the sandbox and GitHub's published REST API differ:\n{shown}", pytrace=False)


def _unversioned(sent: list[SentResponse]) -> Iterator[str]:
    """Requests artbot made (its User-Agent says so) without the API version or media type."""
    ours = [r for r in sent if r.request_headers.get("User-Agent", "").startswith("artbot/")]
    if not ours:
        return
    from artbot.github.client import API_HEADERS, DIFF_MEDIA_TYPE

    for r in ours:
        for name, value in API_HEADERS.items():
            given = r.request_headers.get(name)
            if name == "Accept" and given == DIFF_MEDIA_TYPE and "/pulls/" in (r.route or ""):
                continue  # a pull request asked for as its diff
            if given != value:
                yield f"artbot sent {r.method} {r.route or r.path} without {name}: {value}"


@pytest.fixture(scope="session")
def _shared_sandbox() -> Iterator[TestSandbox]:
    with TestSandbox() as running:
        yield running


@pytest.fixture
def sandbox(_shared_sandbox: TestSandbox) -> TestSandbox:
    """A started, empty sandbox (no repositories yet): one server per test process, reset to a
    new, empty sandbox before each test, so no test sees another's repositories or faults."""
    _shared_sandbox.reset()
    return _shared_sandbox


@pytest.fixture(scope="session")
def art_wheels() -> ArtWheels:
    """openpipe-art's release wheels, fetched into the machine's cache once."""
    return default_wheels()


@pytest.fixture(scope="session")
def wheel_cache(art_wheels: ArtWheels) -> Path:
    """The cache folder holding the wheels of :data:`tests.helpers.wheels.RELEASES`."""
    for version in RELEASES:
        art_wheels.wheel(version)
    return art_wheels.cache


def kept(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    full = item.get_closest_marker("full") is not None
    return not full and in_slice(dict(callspec.params) if callspec else {})


# The tiers in the order their files are handed to the xdist workers (make test runs with
# --no-loadscope-reorder): the slowest files first, so the last ones to finish are short.
_SCHEDULE = ("repro", "network", "e2e")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slice",
        action="store_true",
        help="Of the slow tiers, run only the representative slice (tests/helpers/tiers.py): "
        "make test. Without it, every test runs (make test-all, CI).",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that asks for the release wheels is in the ``network`` tier (it may download
    them). With ``--slice``, a slow test's cases outside the slice are deselected. Files are
    then ordered by their slowest tier (:data:`_SCHEDULE`), else as found."""
    for item in items:
        if {"art_wheels", "wheel_cache"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.network)
    if config.getoption("slice"):
        out = [i for i in items if any(i.get_closest_marker(t) for t in SLOW) and not kept(i)]
        if out:
            config.hook.pytest_deselected(items=out)
            items[:] = [i for i in items if i not in set(out)]
    rank: dict[str, int] = {}
    for item in items:
        tiers = [i for i, name in enumerate(_SCHEDULE) if item.get_closest_marker(name)]
        file = item.nodeid.split("::", 1)[0]
        rank[file] = min([rank.get(file, len(_SCHEDULE)), *tiers])
    items.sort(key=lambda item: rank[item.nodeid.split("::", 1)[0]])


@pytest.fixture(scope="session")
def run_script() -> Iterator[RunScript]:
    """``run_script(path, *args, cwd=DIR, timeout=120, env=None)``: ``python path args...`` in
    DIR, as :func:`subprocess.run` with ``capture_output`` gives it, forked from one interpreter
    that has imported torch (tests/helpers/forkrun.py; started on first use). ``env`` adds to this
    process's environment."""
    servers: list[ForkServer] = []
    base = dict(os.environ)

    def run(
        script: Path,
        *args: str,
        cwd: Path,
        timeout: float = 120,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        if not servers:
            servers.append(ForkServer(base))
        argv = [sys.executable, str(script), *args]
        return servers[0].spawn(argv, cwd, {**base, **(env or {})}, timeout)

    yield run
    for server in servers:
        server.close()


# -- ART's repository in the sandbox (tests/helpers/artrepo.py) ---------------------------------


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A checkout of the catalog (tests/helpers/artrepo.py)."""
    return checkout_catalog(tmp_path / "checkout")


@pytest.fixture
def art(sandbox: TestSandbox) -> TestSandbox:
    """ART as the audit left it: #1108-#1110 filed by hand, then the tracking issue #1111."""
    seed_audit(sandbox)
    return sandbox


# -- the composite action's workspace (tests/helpers/action_harness.py) -------------------------


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """What actions/checkout leaves: the catalog, templates and repros (a copy: sync writes
    its ETag cache into the workspace)."""
    out = tmp_path / "checkout"
    for part in ("findings", "templates", "repros"):
        shutil.copytree(REPO / part, out / part)
    return out


@pytest.fixture
def tracking(sandbox: TestSandbox) -> int:
    """ART as the audit left it, for the action: the dedicated issues filed by hand
    (#1108-#1110), then the tracking issue, as written, right after them."""
    sandbox.create_repo(OWNER, NAME)
    preset = sorted((r["issue"], r["title"]) for r in action_harness.records() if r.get("issue"))
    for number, title in preset:
        action_harness.seed_as(sandbox, number, title, "Filed by hand during the audit.")
    body = (REPO / "findings" / "tracking-issue.md").read_text(encoding="utf-8")
    return sandbox.seed_issue(OWNER, NAME, "Numerics audit of ART", body)
