"""Reading ART's source for the *read* checks (``check_art``): find a function, a line in it,
and say where, as ``file:line`` in the release that was read.

Text, not ``ast``: newer releases may use syntax this Python cannot parse. Nothing here runs
ART's code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Function:
    """One ``def`` in a file: its 1-based first and last line and its lines."""

    path: str
    name: str
    first: int
    last: int
    lines: tuple[str, ...]

    def find(self, pattern: str) -> int | None:
        """1-based line number (in the file) of the first line matching ``pattern``."""
        for offset, line in enumerate(self.lines):
            if re.search(pattern, line):
                return self.first + offset
        return None

    def line(self, number: int) -> str:
        """Line ``number`` of the file (inside this function), stripped: a ``look_for``."""
        return self.lines[number - self.first].strip()

    def text(self, first: int | None = None, last: int | None = None) -> str:
        """The lines from ``first`` to ``last`` (file line numbers, inclusive)."""
        lo = (first or self.first) - self.first
        hi = (last or self.last) - self.first + 1
        return "\n".join(self.lines[lo:hi])

    def statement_end(self, line: int) -> int:
        """Last line of the statement starting at ``line``: where its brackets close."""
        depth = 0
        for offset, text in enumerate(self.lines[line - self.first :]):
            code = text.split("#", 1)[0]
            depth += code.count("(") + code.count("[") - code.count(")") - code.count("]")
            if depth <= 0:
                return line + offset
        return self.last


def function(source: str, path: str, name: str, owner: str | None = None) -> Function | None:
    """The function ``name`` (a method of class ``owner`` when given) in ``source``."""
    lines = source.splitlines()
    start = 0
    if owner is not None:
        cls = next((i for i, line in enumerate(lines) if re.match(rf"class {owner}\b", line)), None)
        if cls is None:
            return None
        start = cls + 1
    for i in range(start, len(lines)):
        top_level = re.match(r"[^\s#)\]@]", lines[i])
        if owner is not None and top_level:
            return None  # left the class
        found = re.match(rf"(\s*)(async\s+)?def {name}\(", lines[i])
        if found is None:
            continue
        indent = len(found.group(1))
        end = i + 1
        while end < len(lines):
            line = lines[end]
            dedented = line.strip() and (len(line) - len(line.lstrip())) <= indent
            if dedented and not line.lstrip().startswith((")", "]")):
                break
            end += 1
        while end > i + 1 and not lines[end - 1].strip():
            end -= 1
        return Function(path, name, i + 1, end, tuple(lines[i:end]))
    return None


def at(path: str, line: int, end: int | None = None, look_for: str = "") -> dict[str, Any]:
    """One ``at`` entry of a read verdict (artbot.status.SourceLine's fields)."""
    out: dict[str, Any] = {"path": path, "line": line, "look_for": look_for}
    if end is not None and end != line:
        out["end"] = end
    return out


def where(entries: list[dict[str, Any]]) -> str:
    """``art/x.py:L12-L14, art/y.py:L3`` for a verdict's detail."""
    parts = []
    for e in entries:
        span = f"L{e['line']}" + (f"-L{e['end']}" if e.get("end") else "")
        parts.append(f"{e['path']}:{span}")
    return ", ".join(parts)
