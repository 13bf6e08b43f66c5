"""The one gate for text that comes from the check process: capped, flattened, and refused
when it looks like a credential.

ART's code runs in the same process as the check, so every string that process returns (a
claim's ``detail`` included, which hostile code can rewrite) is the author's. Before it is
printed, recorded in ``findings/status/`` or put in an issue, it goes through :func:`shown`:

- one line of printable text (control characters, newlines included, become spaces), at most
  :data:`MAX_TEXT` characters, no mention (a word joiner after ``@``), no Actions workflow
  command (``::`` at the start); markdown is made inert where it is rendered
  (:func:`artbot.render.status_view.cell_text`);
- replaced whole by :data:`REFUSED` when it holds what looks like a credential: a GitHub token
  prefix (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``, ``github_pat_``), an
  ``Authorization:`` header or ``extraheader``, a ``Bearer``/``Basic``/``token`` credential
  (8 or more credential characters after the word; a number there, as in "gradient on that
  token 0.333333" or "token 1.5e-08", is a measurement, not a credential), a private key, a
  run of 32 or more base64 characters mixing cases and digits, or the value of any secret it
  is given.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MAX_TEXT = 1000
REFUSED = "[text from the check withheld: it looks like a credential]"
_CREDENTIAL = re.compile(
    r"gh[pousr]_[A-Za-z0-9]{8,}|github_pat_|authorization\s*:|extraheader|"
    r"-----BEGIN [A-Z ]*PRIVATE KEY",
    re.IGNORECASE,
)
# A scheme word and what follows it; a credential unless that is a number (NUMBER).
_SCHEME = re.compile(r"\b(?:bearer|basic|token)\s+([A-Za-z0-9+/=._~-]{8,})", re.IGNORECASE)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?\.?", re.IGNORECASE)
_RUN = re.compile(r"[A-Za-z0-9+/_-]{32,}={0,2}")


def looks_secret(text: str, secrets: Sequence[str] = ()) -> bool:
    """Does ``text`` hold a credential, or one of ``secrets`` (those of 8 characters or more)?"""
    if _CREDENTIAL.search(text):
        return True
    if any(not _NUMBER.fullmatch(value) for value in _SCHEME.findall(text)):
        return True
    for run in _RUN.findall(text):  # base64 of a secret mixes cases and digits; a path does not
        if re.search(r"[a-z]", run) and re.search(r"[A-Z]", run) and re.search(r"[0-9]", run):
            return True
    return any(s and len(s) >= 8 and s in text for s in (x.strip() for x in secrets))


def shown(text: str, secrets: Sequence[str] = (), limit: int = MAX_TEXT) -> str:
    """``text`` from the check process as it may be shown or stored (see the module)."""
    # One line, but the text's own spaces kept: a line to look for is quoted byte for byte.
    flat = "".join(c if c.isprintable() else " " for c in str(text)).strip()
    if looks_secret(flat, secrets) or looks_secret(str(text), secrets):
        return REFUSED
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    flat = flat.replace("@", "@\u2060")
    return "\u2060" + flat if flat.startswith("::") else flat
