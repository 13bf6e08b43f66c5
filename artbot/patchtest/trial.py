"""One patch test: a release unpacked afresh, a copy of it with the patch applied, and on each
the item's check (:func:`artbot.verify.apart.verify_code_apart`, confined, no token) and its
regression test (:mod:`.regress`, the same way). Nothing of ART's runs in this process.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ArtbotError, BadInput
from ..records.catalog import Catalog
from ..status import release_points
from ..verify.apart import verify_code_apart
from ..verify.code import CodeResult, CodeStatus, checkable
from ..verify.release import recorded_pin, release_tree
from ..verify.tree import ArtTree, open_tree
from .command import Refusal
from .diff import DoesNotApply, FilePatch, apply_to_folder
from .probes import Probe, ProbeKind, ranked, scan_files
from .regress import Regression, run_regression

CHECK_TIMEOUT_S = 300.0  # each check process, before and after

# The release's side of a trial (its check, its regression test, the isolation said), kept for
# the rest of the process: answering several requests about one item on one release (`artbot
# answer-tests` over a thread's comments) runs the release once. Keyed by what decides it: the
# records, the wheel's sha256, the item, the limits and the environment the check ran with.
_RELEASE_SIDE: dict[tuple[object, ...], tuple[CodeResult, Regression | None, list[str]]] = {}
_RELEASE_SIDE_MAX = 16


@dataclass(frozen=True)
class Trial:
    """What the patch did to one item on one release."""

    item: int
    release: str
    source: str  # "the comment's diff", "pull request #12", "fix.diff"
    changed: tuple[str, ...]  # the wheel paths the patch changed
    before: CodeResult
    after: CodeResult
    regression_before: Regression | None
    regression_after: Regression | None
    isolation: str
    seconds: float
    timings: Mapping[str, float] = field(default_factory=dict)
    probes: tuple[Probe, ...] = ()  # what the patch's text reaches for beyond numbers

    @property
    def vouched(self) -> bool:
        """The one rule (#53): artbot vouches for the patch only where the check on the patched
        code says fixed and the patch's text has no probe (:mod:`.probes`); the answer's
        headline, the terminal's and ``artbot test``'s exit code read it."""
        return self.after.status is CodeStatus.fixed and not self.probes


class TimedOut(Exception):
    """The trial reached its deadline (its share of the run's time budget)."""

    def __init__(self, seconds: float):
        super().__init__(f"ran over its time ({seconds:.0f} s)")
        self.seconds = seconds


def newest_checked(root: Path) -> str:
    """The newest release recorded in findings/status/ (what a request without one gets)."""
    versions = {p.label for p in release_points(root)}
    if not versions:
        raise BadInput("findings/status/ records no checked release: name one")
    return max(versions, key=lambda v: tuple(int(p) for p in v.split(".") if p.isdigit()))


def run_trial(
    catalog: Catalog,
    item: int,
    files: Sequence[FilePatch],
    release: str,
    *,
    source: str,
    cache: Path | None = None,
    env: Mapping[str, str] | None = None,
    secrets: Sequence[str] = (),
    timeout_s: float = CHECK_TIMEOUT_S,
    progress: Callable[[str], None] | None = None,
    deadline: float | None = None,
    seed: int | None = None,
) -> Trial | Refusal:
    """Apply ``files`` to ``release`` and check item ``item`` before and after; a patch that
    does not apply, or an item without a check, is a :class:`Refusal`. ``deadline`` (on
    ``time.monotonic``'s clock) bounds the whole trial: each process gets what is left of it,
    and a trial that reaches it raises :class:`TimedOut`. ``seed`` draws the check's inputs
    (else a secret one; artbot judges what the check measured on them, .rejudge)."""
    say = progress or (lambda _: None)
    finding = catalog.get(item)
    if finding not in checkable(catalog):
        return Refusal(f"item {item} has no check of ART's code to run (no check_art)")
    started = time.monotonic()
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="artbot-patchtest-") as scratch:
        try:
            tree = release_tree(
                release,
                catalog.audit,
                cache,
                progress=say,
                pin=recorded_pin(catalog.root, release),
                into=Path(scratch) / "release",
            )
        except ArtbotError as exc:
            return Refusal(f"openpipe-art {release}: {exc}", exit_code=exc.exit_code)
        released = tree.package_dir.parent
        patched = Path(scratch) / "patched" / released.name
        shutil.copytree(released, patched, symlinks=True)
        try:
            changed = apply_to_folder(patched, files)
        except DoesNotApply as exc:
            return Refusal(f"{exc} (openpipe-art {release})")
        probes = read_probes(released, patched, files)  # read, never run, before any check
        ptree = open_tree(patched, catalog.audit, label=f"openpipe-art {release} + the patch")
        said: list[str] = []

        def left() -> float:
            """The time a process of this trial may take (the trial's deadline, if any)."""
            if deadline is None:
                return timeout_s
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimedOut(time.monotonic() - started)
            return min(timeout_s, remaining)

        def check(which: str, t: ArtTree) -> CodeResult:
            at = time.monotonic()
            say(f"patchtest: item {item}: the check on {which} ...")
            [result] = verify_code_apart(
                catalog, t, items=[item], env=env, secrets=secrets,
                timeout_s=left(), say=said.append, seed=seed,
            )  # fmt: skip
            timings[f"check {which}"] = time.monotonic() - at
            left()  # a check that ran to the deadline: the trial timed out
            return result

        def regression(which: str, t: ArtTree) -> Regression | None:
            say(f"patchtest: item {item}: the regression test on {which} ...")
            found = run_regression(catalog, t, item, env=env, secrets=secrets, timeout_s=left())
            left()
            if found is not None:
                timings[f"regression test {which}"] = found.seconds
            return found

        # The environment and the secrets enter the key as one digest: the cache holds no
        # credential of its own.
        private = json.dumps([sorted((env or {}).items()), list(secrets)]).encode()
        key = (
            str(Path(catalog.root).resolve()),
            tree.sha256,
            item,
            timeout_s,
            hashlib.sha256(private).hexdigest(),
        )
        known = _RELEASE_SIDE.get(key) if tree.sha256 else None
        if known is None:
            before = check("the release", tree)
            reg_before = regression("the release", tree)
            if tree.sha256 and len(_RELEASE_SIDE) < _RELEASE_SIDE_MAX:
                _RELEASE_SIDE[key] = (before, reg_before, list(said))
        else:
            before, reg_before, said[:] = known[0], known[1], known[2]
            say(f"patchtest: item {item}: the release's check and test as run earlier")
        after = check("the patched tree", ptree)
        reg_after = regression("the patched tree", ptree)
    isolation = said[0].removeprefix("verify: ") if said else "no check ran"
    return Trial(
        item,
        release,
        source,
        tuple(changed),
        before,
        after,
        reg_before,
        reg_after,
        isolation,
        time.monotonic() - started,
        timings,
        probes,
    )


def read_probes(released: Path, patched: Path, files: Sequence[FilePatch]) -> tuple[Probe, ...]:
    """The probes of the files ``files`` changed: each release's file beside its patched copy
    (in the two unpacked trees), as text; a file that is not UTF-8 is a probe itself. The
    most telling first (:func:`.probes.ranked`): the headline names it, the handover keeps the
    first few."""
    texts: dict[str, tuple[str | None, str | None]] = {}
    odd: list[Probe] = []
    for patch in files:
        sides: list[str | None] = []
        for root in (released, patched):
            path = root / patch.wheel_path
            try:
                sides.append(path.read_bytes().decode("utf-8") if path.is_file() else None)
            except UnicodeDecodeError:
                sides.append(None)
                if root == patched:
                    odd.append(Probe(patch.path, 1, ProbeKind.unscanned, "not UTF-8"))
        texts[patch.path] = (sides[0], sides[1])
    return ranked((*odd, *scan_files(texts)))
