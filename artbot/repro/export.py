"""``artbot export-tests``: the regression tests ART can merge, copied out of ``repros/regression``.

The files are written for ART's own test suite (they import ``art....`` and never artbot), so
exporting is a plain copy. A file of the same name that holds something else is refused, before
anything is written, unless ``force``; one that already holds the same text is left as it is.
Nothing else is touched, and no symbolic link is written through.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput

REGRESSION_DIR = Path("repros") / "regression"
# ART's own layout: its CI runs `pytest tests/unit`, where its CPU tests live.
ART_TESTS = Path("tests") / "unit"


@dataclass(frozen=True)
class Exported:
    path: Path
    written: bool  # False: a file of the same name already held this very text


def regression_tests(root: Path) -> list[Path]:
    return sorted((root / REGRESSION_DIR).glob("test_*.py"))


def default_out(cwd: Path | None = None) -> Path:
    """Where ``export-tests`` writes without ``--out``: ART's ``tests/unit/`` when run in an
    ART checkout (it has ``src/art/``); anywhere else a folder must be named, so nothing lands in
    a folder that is not ART's by a guess."""
    here = Path(".") if cwd is None else cwd
    if not (here / "src" / "art").is_dir():
        raise BadInput(
            f"export-tests: {here.absolute()} is not an ART checkout (no src/art/); run it in "
            f"ART's checkout to write {ART_TESTS}/, or give --out DIR"
        )
    return here / ART_TESTS if cwd is not None else ART_TESTS


def export_tests(root: Path, out: Path, *, force: bool = False) -> list[Exported]:
    """Copy each regression test into ``out``; a symbolic link (``out`` itself, or a file in
    it) is refused, never written through, and a folder that cannot be written is bad input, as
    is a different file of the same name without ``force``, or a ``root`` with no tests."""
    tests = regression_tests(root)
    if not tests:
        raise BadInput(f"{root / REGRESSION_DIR}: no regression tests (test_*.py); nothing written")
    if out.is_symlink():
        raise BadInput(f"--out {out}: a symbolic link; give the folder itself")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"--out {out}: cannot be made a folder ({exc.strerror or exc})") from None
    plan: list[tuple[Path, bytes, bool]] = []
    differ: list[str] = []
    for test in tests:
        target = out / test.name
        if target.is_symlink() or target.resolve().parent != out.resolve():
            raise BadInput(f"--out {out}: {test.name} there is a symbolic link; not written")
        text = test.read_bytes()
        same = target.is_file() and target.read_bytes() == text
        if target.exists() and not same:
            differ.append(test.name)
        plan.append((target, text, not same))
    if differ and not force:
        raise BadInput(
            f"--out {out}: {', '.join(differ)} there differ from artbot's; nothing written "
            "(--force replaces them)"
        )
    for target, text, write in plan:
        if write:
            _write(out, target, text)
    return [Exported(target, write) for target, _, write in plan]


def _write(out: Path, target: Path, text: bytes) -> None:
    try:
        # O_NOFOLLOW: a link made meanwhile is refused too, never followed.
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(text)
    except OSError as exc:
        raise BadInput(f"--out {out}: cannot write {target.name} ({exc.strerror or exc})") from None
