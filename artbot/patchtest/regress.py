"""An item's regression test (``repros/regression/test_item*.py``) run with pytest on one tree,
in a child confined as the code checks are (:mod:`artbot.verify.apart`): no token in its
environment, its own namespaces, nothing writable but its scratch folder.

The test is a strict xfail while the finding is present; it is run with ``--runxfail``, so it
simply passes (the patch fixes what it asserts) or fails (still present), whatever its mark.
Only pytest's per-test outcome lines are read back; the child's other output is dropped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..records.catalog import Catalog
from ..report.output import flatten
from ..settings import TOKEN_VARIABLES, environment
from ..verify.apart import (
    CannotConfine,
    _Run,
    _view,
    child_env,
    inert,
    refusal,
    tokens_in,
)
from ..verify.tree import ArtTree
from .harness import CONFTEST, PACKAGE_VARIABLE

TIMEOUT_S = 300.0
_LINE_RE = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED) (\S+?)(?: - (.*))?$", re.M)


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
    secrets = (*secrets, *(base.get(k, "") for k in TOKEN_VARIABLES))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="artbot-regression-") as scratch:
        folder = Path(scratch)
        shutil.copyfile(source, folder / name)
        (folder / "conftest.py").write_text(CONFTEST, encoding="utf-8")
        (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        argv = [
            sys.executable, "-m", "pytest", "-q", "-rA", "--runxfail", "-p", "no:cacheprovider",
            "-c", str(folder / "pytest.ini"), "--rootdir", scratch, name,
        ]  # fmt: skip
        cenv = child_env(base, secrets)
        cenv |= {PACKAGE_VARIABLE: str(tree.package_dir), "PYTHONDONTWRITEBYTECODE": "1"}
        # The harness is this artbot's, wherever the interpreter's own install points.
        here = str(Path(__file__).resolve().parents[2])
        cenv["PYTHONPATH"] = os.pathsep.join(p for p in (here, cenv.get("PYTHONPATH")) if p)
        run = _Run("", timeout_s, scratch)
        try:
            view = _view(catalog, tree, base, scratch)
            failed = run.confined(argv, {**cenv, "HOME": scratch, "TMPDIR": scratch}, view)
            if failed is not None:
                tokens = tokens_in(base)
                in_actions = base.get("GITHUB_ACTIONS") == "true"
                if tokens or in_actions:
                    raise CannotConfine(refusal(failed, tokens, in_actions))
                run.plain(argv, cenv)
        except subprocess.TimeoutExpired:
            took = time.monotonic() - started
            return Regression(name, "could not run", f"ran over {timeout_s:.0f} s", took)
    took = time.monotonic() - started
    proc = run.proc
    stdout = (proc.stdout or "") if proc else ""
    stderr = (proc.stderr or "") if proc else ""
    return Regression(name, *outcome(stdout, proc.returncode if proc else None, stderr), took)


def outcome(stdout: str, returncode: int | None, stderr: str = "") -> tuple[str, str]:
    """(``passed`` | ``failed`` | ``error`` | ``could not run``, one line) from pytest's
    ``-rA`` lines."""
    seen = [(m[1], m[3] or "") for m in _LINE_RE.finditer(stdout[-200_000:])]
    counts: dict[str, int] = {}
    for word, _ in seen:
        counts[word.lower()] = counts.get(word.lower(), 0) + 1
    summary = ", ".join(f"{n} {w}" for w, n in sorted(counts.items()))
    words = {w for w, _ in seen}
    if words and words <= {"ERROR"} and returncode == 2:  # the test file did not import
        why = next(d for w, d in seen if w == "ERROR")
        return "error", inert(f"{summary}: {why}"[:300])
    if not seen or returncode not in (0, 1):
        tail = flatten(f"{stdout} {stderr}")[-300:]
        return "could not run", inert(f"pytest exited {returncode}: {tail}")
    if any(w in ("FAILED", "ERROR") for w, _ in seen):
        why = next(d for w, d in seen if w in ("FAILED", "ERROR"))
        return "failed", inert(f"{summary}: {why}"[:300])
    return "passed", summary
