"""Read ART's source with ``ast``, one statement at a time.

ART needs Python 3.12 and some of its files use 3.12 syntax (``type X = ...``), which the
Python that runs artbot (3.11) cannot parse as a whole file. So a check finds a statement by
its text, then parses *that statement* on its own (dedented), never cutting code at a bracket:

- :func:`statement_at` parses the simple statement that starts on a line (an assignment or a
  call spread over several lines), adding one line at a time until the text parses.
- :func:`block_at` parses the compound statement (``def``, ``class``) that starts on a line,
  with every line indented under it.
- :func:`lines_with` lists the lines that hold a piece of text.

Line numbers are the file's (1-based). Nothing here runs ART's code.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

MAX_STATEMENT_LINES = 400


@dataclass(frozen=True)
class Parsed:
    """One statement of a file, parsed alone; ``line`` and ``end`` are the file's lines."""

    node: ast.stmt
    line: int
    end: int
    text: str


def lines_with(text: str, needle: str) -> list[int]:
    """1-based numbers of the lines of ``text`` that contain ``needle``."""
    return [n for n, line in enumerate(text.splitlines(), 1) if needle in line]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _parse(lines: list[str], first: int, last: int) -> ast.stmt | None:
    """Lines ``first..last`` (1-based, inclusive) as one statement, or None if they don't parse."""
    chunk = textwrap.dedent("\n".join(lines[first - 1 : last]))
    try:
        module = ast.parse(chunk)
    except SyntaxError:
        return None
    return module.body[0] if len(module.body) == 1 else None


def statement_at(text: str, line: int) -> Parsed:
    """The statement that starts on ``line``: the shortest run of lines from there that parses
    as exactly one statement."""
    lines = text.splitlines()
    for last in range(line, min(len(lines), line + MAX_STATEMENT_LINES) + 1):
        node = _parse(lines, line, last)
        if node is not None:
            return Parsed(node, line, last, "\n".join(lines[line - 1 : last]))
    raise SyntaxError(f"no statement starting on line {line} parses")


def block_at(text: str, line: int) -> Parsed:
    """The ``def`` or ``class`` that starts on ``line`` (decorators excluded), with its body:
    every following line that is blank or indented deeper than its first line."""
    lines = text.splitlines()
    base = _indent(lines[line - 1])
    last = line
    for n in range(line + 1, len(lines) + 1):
        current = lines[n - 1]
        if current.strip() and _indent(current) <= base:
            # A closing bracket of a multi-line signature sits at the def's own indentation.
            if current.strip().startswith((")", "]", "}")) and n == last + 1:
                last = n
                continue
            break
        last = n
    while last > line and not lines[last - 1].strip():
        last -= 1
    node = _parse(lines, line, last)
    if node is None:
        raise SyntaxError(f"the block starting on line {line} does not parse")
    return Parsed(node, line, last, "\n".join(lines[line - 1 : last]))


def enclosing_def(text: str, line: int) -> Parsed:
    """The innermost ``def`` whose block holds ``line``."""
    lines = text.splitlines()
    target = _indent(lines[line - 1])
    for n in range(line - 1, 0, -1):
        head = lines[n - 1].lstrip()
        if head.startswith(("def ", "async def ")) and _indent(lines[n - 1]) < target:
            block = block_at(text, n)
            if block.end >= line:
                return block
            target = _indent(lines[n - 1])
    raise SyntaxError(f"line {line} is in no function")


def class_named(text: str, name: str) -> Parsed:
    """``class <name>`` at any indentation, parsed with its body."""
    for n in lines_with(text, f"class {name}"):
        head = text.splitlines()[n - 1].lstrip()
        if head.startswith((f"class {name}:", f"class {name}(")):
            return block_at(text, n)
    raise LookupError(f"no class {name}")
