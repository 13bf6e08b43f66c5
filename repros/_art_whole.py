"""ART's modules imported whole, boundary packages stood in for: ``artbot/verify/whole.py``.

The one implementation lives in artbot, because the regression tests' import harness
(``artbot/patchtest/harness.py``) loads ART's files the same way. The checks that use it
(``check_art``) run inside artbot's import context; this module resolves its names from artbot
only when a check asks for them, so a repro script run alone (without artbot) still imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from artbot.verify.whole import BOUNDARY_PACKAGES, GPU_PACKAGES, Whole, whole  # noqa: F401


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(importlib.import_module("artbot.verify.whole"), name)
