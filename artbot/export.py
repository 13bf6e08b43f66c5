"""``artbot export-tests``: the regression tests ART can merge, copied out of ``repros/regression``.

The files are written for ART's own test suite (they import ``art....`` and never artbot), so
exporting is a plain copy; existing files of the same name are replaced, nothing else is touched.
"""

from __future__ import annotations

import shutil
from pathlib import Path

REGRESSION_DIR = Path("repros") / "regression"


def regression_tests(root: Path) -> list[Path]:
    return sorted((root / REGRESSION_DIR).glob("test_*.py"))


def export_tests(root: Path, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for test in regression_tests(root):
        target = out / test.name
        shutil.copyfile(test, target)
        written.append(target)
    return written
