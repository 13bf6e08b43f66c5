"""Where a check found ART's code: source lines of the release it checked, for ``check_art``.

A verdict of ``artbot verify`` says how it was reached (``ran`` ART's function, ``read`` its
source, ``modelled``) and where: ``at`` (the claim's code in that release) and, for a fixed
claim, ``fix`` (the lines that fix it). These helpers find those lines in the release itself,
from the text of a line to look for (or a line a check found in it: :func:`span`,
:func:`block`), so no line number is written down by hand. Each returns
plain dicts in the shape of ``artbot.status.SourceLine`` (``path`` in the wheel's layout,
``art/loss.py``; ``line``; ``end``; ``look_for``), or None when the text is not there; artbot's
verify checks every returned line against the release again before recording it.

``art`` is what ``check_art`` receives (``art.name``, ``art.source(relpath)``); nothing here
imports or runs ART's code.
"""

from __future__ import annotations

import ast
from typing import Any

import _source


def find_line(source: str, text: str, *, after: int = 0) -> int | None:
    """The first line after line ``after`` whose text, stripped, is ``text`` stripped."""
    wanted = text.strip()
    for number, line in enumerate(source.splitlines(), 1):
        if number > after and line.strip() == wanted:
            return number
    return None


def statement(source: str, line: int) -> tuple[int, int]:
    """First and last line of the innermost statement that holds ``line`` (the line alone when
    the source does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return line, line
    best = (line, line)
    width = None
    for node in ast.walk(tree):
        end = node.end_lineno or node.lineno if isinstance(node, ast.stmt) else 0
        if not isinstance(node, ast.stmt) or not node.lineno <= line <= end:
            continue
        # A compound statement (it has a body) counts only on its own first line.
        if hasattr(node, "body") and node.lineno != line:
            continue
        if width is None or end - node.lineno < width:
            best, width = (node.lineno, end), end - node.lineno
    return best


def lines(
    art: Any,
    relpath: str,
    first: str,
    last: str | None = None,
    *,
    look_for: str | None = None,
) -> dict[str, Any] | None:
    """The statement that holds the line ``first`` in ``art/<relpath>``, through the end of the
    statement that holds the first line ``last`` after it (when given). ``look_for`` (default
    ``last``, else ``first``) is the line a reader should look for; it must lie in the span."""
    source = art.source(relpath)
    start_line = find_line(source, first)
    if start_line is None:
        return None
    start, end = statement(source, start_line)
    if last is not None:
        last_line = find_line(source, last, after=start_line - 1)
        if last_line is None:
            return None
        end = max(end, statement(source, last_line)[1])
    shown = (look_for or last or first).strip()
    found = find_line(source, shown, after=start - 1)
    if found is None or found > end:
        return None
    return {"path": f"{art.name}/{relpath}", "line": start, "end": end, "look_for": shown}


def function(art: Any, relpath: str, name: str) -> dict[str, Any] | None:
    """The ``def`` of a top-level function or class ``name`` in ``art/<relpath>``."""
    source = art.source(relpath)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        kinds = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
        if isinstance(node, kinds) and node.name == name:
            return span(art, relpath, node.lineno, node.end_lineno)
    return None


def span(
    art: Any, relpath: str, line: int, end: int | None = None, *, look_for: int | None = None
) -> dict[str, Any]:
    """Lines ``line`` to ``end`` of ``art/<relpath>``; the line to look for is line
    ``look_for`` (default ``line``)."""
    shown = art.source(relpath).splitlines()[(look_for or line) - 1].strip()
    return {"path": f"{art.name}/{relpath}", "line": line, "end": end, "look_for": shown}


def block(art: Any, relpath: str, line: int) -> dict[str, Any]:
    """The ``def`` or ``class`` that starts on ``line`` of ``art/<relpath>``, with its body
    (``_source.block_at``: parsed alone, for a file that Python 3.11 cannot parse whole)."""
    parsed = _source.block_at(art.source(relpath), line)
    return span(art, relpath, parsed.line, parsed.end)


def claim(
    verdict: bool | None,
    detail: str,
    *,
    method: str,
    at: list[dict[str, Any] | None] | None = None,
    fix: list[dict[str, Any] | None] | None = None,
    domain: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One claim's result for ``check_art``: ``verdict`` True (reproduced), False (fixed) or
    None (not checked). ``fix`` is kept only for a fixed verdict, and only when every fixing
    line was found (a fix shown in part would mislead). ``domain`` is what the claim's property
    was searched over, in the shape of ``artbot.status.Domain`` (``covers``, ``inputs``,
    ``budget_s``, ``seconds``, ``seed``, ``counterexample``: ``{"inputs": {...}, "measured":
    ..., "bound": ...}`` or None)."""
    out: dict[str, Any] = {"verdict": verdict, "detail": detail, "method": method}
    if domain is not None:
        out["domain"] = domain
    found = [a for a in at or () if a is not None]
    if found:
        out["at"] = found
    if verdict is False and fix and all(f is not None for f in fix):
        out["fix"] = {"lines": list(fix)}
    return out


def one_claim(claim_id: str, result: dict[str, Any], ran: str) -> dict[str, Any]:
    """What ``check_art`` returns for a finding of one claim: that claim's ``result``
    (:func:`claim`), whose detail is the finding's, and the one ART function ``ran``."""
    return {"claims": {claim_id: result}, "detail": result["detail"], "ran": [ran]}
