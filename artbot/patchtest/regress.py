"""An item's regression test (``repros/regression/test_item*.py``) run with pytest on one tree,
in a child confined as the code checks are (:mod:`artbot.verify.apart`): no token in its
environment, its own namespaces, nothing writable but its scratch folder.

The test is a strict xfail while the finding is present; it is run with ``--runxfail``, so it
simply passes (the patch fixes what it asserts) or fails (still present), whatever its mark.
Only the JUnit XML report pytest writes in the scratch folder is read back (bounded, its text
through the one sanitizer); whatever the child prints is counted and dropped.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from ..records.catalog import Catalog
from ..settings import TOKEN_VARIABLES, environment
from ..verify.apart import (
    CannotConfine,
    _Run,
    _view,
    child_env,
    refusal,
    tokens_in,
)
from ..verify.limits import Limits, ResultPipe
from ..verify.sanitize import shown
from ..verify.tree import ArtTree
from .harness import CONFTEST, PACKAGE_VARIABLE, SIBLINGS_VARIABLE

TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Regression:
    """One run of the item's regression test: ``passed``, ``failed``, ``error`` (it did not
    import) or ``could not run``."""

    test: str  # the file's name
    outcome: str
    detail: str
    seconds: float


def run_regression(
    catalog: Catalog,
    tree: ArtTree,
    item: int,
    *,
    env: Mapping[str, str] | None = None,
    secrets: Sequence[str] = (),
    timeout_s: float = TIMEOUT_S,
) -> Regression | None:
    """The item's regression test on ``tree``, confined; None when the item has none.
    Raises :class:`CannotConfine` as ``verify`` does (no confinement and a token set)."""
    relpath = catalog.regression.get(item)
    if relpath is None:
        return None
    source = Path(catalog.root) / relpath
    name = source.name
    base = environment() if env is None else dict(env)
    secrets = tuple(s for s in (*secrets, *(base.get(k, "") for k in TOKEN_VARIABLES)) if s)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="artbot-regression-") as scratch:
        folder = Path(scratch)
        shutil.copyfile(source, folder / name)
        (folder / "conftest.py").write_text(CONFTEST, encoding="utf-8")
        (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        # pytest writes its report into a pipe it inherits (/dev/fd/N), never a file artbot
        # opens by name.
        report = ResultPipe(MAX_REPORT_BYTES)
        argv = [
            sys.executable, "-m", "pytest", "-q", "--runxfail", "-p", "no:cacheprovider",
            "-c", str(folder / "pytest.ini"), "--rootdir", scratch,
            f"--junitxml=/dev/fd/{report.fd}", name,
        ]  # fmt: skip
        cenv = child_env(base, secrets)
        cenv |= {PACKAGE_VARIABLE: str(tree.package_dir), "PYTHONDONTWRITEBYTECODE": "1"}
        cenv[SIBLINGS_VARIABLE] = ",".join(tree.packages)
        # The harness is this artbot's, wherever the interpreter's own install points.
        here = str(Path(__file__).resolve().parents[2])
        cenv["PYTHONPATH"] = os.pathsep.join(p for p in (here, cenv.get("PYTHONPATH")) if p)
        limits = Limits()
        run = _Run("", timeout_s, scratch, limits, report.fd)
        try:
            failed = run.confined(
                argv, {**cenv, "HOME": scratch, "TMPDIR": scratch}, _view(catalog, tree, scratch)
            )
            if failed is not None:
                tokens = tokens_in(base)
                in_actions = base.get("GITHUB_ACTIONS") == "true"
                if tokens or in_actions:
                    raise CannotConfine(refusal(failed, tokens, in_actions))
                run.plain(argv, cenv)
        finally:
            raw = report.close()
        why = run.failure(limits)
    took = time.monotonic() - started
    done = run.finished
    if done is not None and done.timed_out:
        return Regression(name, "could not run", f"ran over {timeout_s:.0f} s", took)
    code = done.returncode if done is not None else None
    if not raw:
        return Regression(name, "could not run", why or f"pytest exited {code}: no report", took)
    return Regression(name, *outcome(raw, code, secrets), took)


MAX_REPORT_BYTES = 1 << 20


def outcome(report: bytes, returncode: int | None, secrets: Sequence[str] = ()) -> tuple[str, str]:
    """(``passed`` | ``failed`` | ``error`` | ``could not run``, one line) from the JUnit XML
    report pytest wrote in the scratch folder: counts by outcome, and the first failure's
    message through the one sanitizer. Nothing the child printed is read."""
    if len(report) > MAX_REPORT_BYTES or b"<!DOCTYPE" in report or b"<!ENTITY" in report:
        return "could not run", "the test's report was too large or not plain XML"
    try:
        root = ElementTree.fromstring(report)
    except ElementTree.ParseError:
        return "could not run", f"pytest exited {returncode}: the test's report did not parse"
    counts: dict[str, int] = {}
    first: tuple[str, str] | None = None
    for case in root.iter("testcase"):
        kind = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                kind = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                if first is None and kind in ("failed", "error"):
                    first = (kind, child.get("message") or "")
        counts[kind] = counts.get(kind, 0) + 1
    summary = ", ".join(f"{n} {w}" for w, n in sorted(counts.items()))
    if not counts:
        suite = next(root.iter("testsuite"), root)
        if int(suite.get("errors") or 0):  # the test file did not import
            return "error", "the test file did not import"
        return "could not run", f"pytest exited {returncode}: no test ran"
    if first is not None:
        kind, message = first
        verdict = "error" if kind == "error" and set(counts) == {"error"} else "failed"
        return verdict, shown(f"{summary}: {message}"[:300], secrets)
    return "passed", summary
