"""Which openpipe-art release is the newest: asked of pip, never hard-coded.

``sync --verify latest`` (the scheduled workflow) resolves the version here, then checks the
findings against that release's own code. Newer releases need Python >= 3.12, so pip is asked
for 3.12 wheels whatever Python artbot runs on (on 3.11 pip would otherwise answer with the
last release that supports 3.11).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable

from .verify import DISTRIBUTION, WHEEL_PYTHON, ReleaseUnavailable

Runner = Callable[..., subprocess.CompletedProcess[str]]
_ANSWER_RE = re.compile(rf"^{re.escape(DISTRIBUTION)} \(([0-9][0-9A-Za-z.+!-]*)\)\s*$", re.M)


def newest_release(*, run: Runner = subprocess.run) -> str:
    """The newest version of openpipe-art with a wheel for Python 3.12, e.g. ``0.5.23``."""
    command = [
        sys.executable, "-m", "pip", "index", "versions", "--python-version", WHEEL_PYTHON,
        "--only-binary=:all:", DISTRIBUTION,
    ]  # fmt: skip
    proc = run(command, capture_output=True, text=True, check=False)
    found = _ANSWER_RE.search(proc.stdout or "")
    if proc.returncode != 0 or found is None:
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-2:]
        raise ReleaseUnavailable(
            f"pip could not tell the newest {DISTRIBUTION} release: " + " / ".join(tail)
        )
    from .inputs import check_version

    return check_version(found.group(1), "pip's newest version")


def resolve(version: str, *, run: Runner = subprocess.run) -> str:
    """``version`` itself, or the newest release for ``latest``."""
    return newest_release(run=run) if version == "latest" else version
