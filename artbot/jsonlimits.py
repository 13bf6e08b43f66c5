"""JSON read with limits: a file or an answer too large or nested too deep is bad input, not a
crash (Python's parser ends 200k-deep nesting with RecursionError)."""

from __future__ import annotations

import json
import re
from typing import Any

MAX_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 64


class JsonTooLarge(ValueError):
    """The text is over the size limit or nested deeper than the depth limit."""


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKET = re.compile(r"[\[\]{}]")


def _depth_ok(text: str, max_depth: int) -> bool:
    """Nesting of ``[`` and ``{`` outside strings stays within ``max_depth``."""
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub("", text)):
        depth += 1 if match.group() in "[{" else -1
        if depth > max_depth:
            return False
    return True


def loads_limited(
    data: str | bytes, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH
) -> Any:
    """``json.loads`` that raises :class:`JsonTooLarge` over the limits, ``ValueError`` on
    text that is not JSON (a byte-order mark included: JSON has none)."""
    if len(data) > max_bytes:
        raise JsonTooLarge(f"over {max_bytes} bytes")
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    if text.startswith("\ufeff"):
        raise ValueError("starts with a byte-order mark")
    if not _depth_ok(text, max_depth):
        raise JsonTooLarge(f"nested deeper than {max_depth} levels")
    try:
        return json.loads(text)
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise JsonTooLarge(f"nested deeper than {max_depth} levels") from None
