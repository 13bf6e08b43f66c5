"""Unified diffs for the patch-testing tests, written as ``git diff`` prints them in ART's
repository (``a/src/art/...``), and the patched copies of a release they describe."""

from __future__ import annotations

import difflib

RELEASE = "0.5.23"


def make_diff(path: str, old: str, new: str, *, context: int = 3) -> str:
    """``old`` -> ``new`` of ``path`` (``src/art/...``) as ``git diff`` prints it."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        f"a/{path}",
        f"b/{path}",
        n=context,
    )
    return f"diff --git a/{path} b/{path}\nindex 0000000..1111111 100644\n" + "".join(lines)


def as_comment(diff: str, release: str | None = RELEASE) -> str:
    """A writer's ``/artbot test`` comment carrying ``diff``."""
    head = "/artbot test" + (f" {release}" if release else "")
    return f"{head}\n\nThis should fix it.\n\n```diff\n{diff}```\n"


def snoop_source(original: str, targets: list[str]) -> str:
    """``art/loss.py`` with code run at import that looks for a token (its environment, every
    process's /proc/PID/environ it can see) and writes each of ``targets``; it then raises
    what it found, so the check's answer carries it."""
    probe = f"""
import glob as _glob, os as _os
_found = [k for k in _os.environ if "TOKEN" in k.upper() or "SECRET" in k.upper()]
for _p in _glob.glob("/proc/*/environ"):
    try:
        with open(_p, "rb") as _f:
            if b"TOKEN" in _f.read():
                _found.append(_p)
    except OSError:
        pass
for _t in {targets!r}:
    try:
        with open(_t, "w") as _f:
            _f.write("escaped")
        _found.append("wrote " + _t)
    except OSError:
        pass
raise RuntimeError("snooped: " + repr(_found))
"""
    head, sep, rest = original.partition("\nclass ")
    return head + "\n" + probe + sep + rest
