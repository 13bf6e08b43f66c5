"""``artbot export-tests``: the regression tests ART can merge, copied out of ``repros/regression``.

The files are written for ART's own test suite (they import ``art....`` and never artbot), so
exporting is a plain copy; existing files of the same name are replaced, nothing else is touched,
and no symbolic link is written through.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import BadInput

REGRESSION_DIR = Path("repros") / "regression"


def regression_tests(root: Path) -> list[Path]:
    return sorted((root / REGRESSION_DIR).glob("test_*.py"))


def export_tests(root: Path, out: Path) -> list[Path]:
    """Copy each regression test into ``out``; a symbolic link (``out`` itself, or a file in
    it) is refused, never written through, and a folder that cannot be written is bad input."""
    if out.is_symlink():
        raise BadInput(f"--out {out}: a symbolic link; give the folder itself")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"--out {out}: cannot be made a folder ({exc.strerror or exc})") from None
    written = []
    for test in regression_tests(root):
        target = out / test.name
        if target.is_symlink() or target.resolve().parent != out.resolve():
            raise BadInput(f"--out {out}: {test.name} there is a symbolic link; not written")
        try:
            # O_NOFOLLOW: a link made meanwhile is refused too, never followed.
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(test.read_bytes())
        except OSError as exc:
            raise BadInput(
                f"--out {out}: cannot write {test.name} ({exc.strerror or exc})"
            ) from None
        written.append(target)
    return written
