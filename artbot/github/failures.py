"""A failed request to GitHub as one line: every client failure leaves the adapter
(:mod:`artbot.github.client`) as a :class:`~artbot.errors.RemoteError`, built from the status
code and GitHub's ``message`` only (the token never enters it), with a hint where the fix is the
token's: 401 (invalid or expired) and 403 (no permission), a rate limit's 403 excepted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from github import GithubException, RateLimitExceededException

from ..errors import RemoteError
from ..report.output import flatten

# What to do about a status that is the token's fault, said once, on the error's own line.
HINTS = {
    401: "the token is invalid or expired: set a valid GH_TOKEN (or GITHUB_TOKEN)",
    403: (
        "the token lacks the permission: issues: write (a fine-grained token or an App) or the "
        "repo scope (a classic token); or the resource is protected"
    ),
}


@contextmanager
def remote(what: str) -> Iterator[None]:
    """Turn any client failure into a one-line :class:`RemoteError`."""
    import requests

    try:
        yield
    except GithubException as exc:
        message = exc.data.get("message") if isinstance(exc.data, dict) else None
        errors = exc.data.get("errors") if isinstance(exc.data, dict) else None
        detail = f": {message}" if message else ""
        if isinstance(errors, list) and errors:
            detail += (
                " ("
                + "; ".join(
                    str(e.get("message") or e.get("code")) for e in errors if isinstance(e, dict)
                )
                + ")"
            )
        # GitHub's text is remote text: one line, of bounded length.
        detail = flatten(detail)[:500] + _hint(exc)
        raise RemoteError(f"{what}: GitHub answered {exc.status}{detail}", exc.status) from None
    except RuntimeError as exc:  # PyGithub refusing a 301 to another host or scheme
        raise RemoteError(f"{what}: {_short(str(exc))}") from None
    except requests.exceptions.RetryError as exc:
        reason = str(exc.args[0].reason) if exc.args and hasattr(exc.args[0], "reason") else ""
        raise RemoteError(f"{what}: gave up after retries ({_short(reason)})") from None
    except requests.exceptions.ConnectionError as exc:
        raise RemoteError(f"{what}: {_unreachable(str(exc))}") from None
    except requests.exceptions.RequestException as exc:
        raise RemoteError(f"{what}: {type(exc).__name__}: {_short(str(exc))}") from None


def _unreachable(text: str) -> str:
    """A connection failure in one line: where, why, and what to check."""
    where = re.search(r"host='([^']+)', port=(\d+)", text)
    errno = re.search(r"\[Errno -?\d+\] [^'\")]+", text)
    if errno:
        why = errno[0].strip()
    elif "NameResolution" in text or "getaddrinfo" in text:
        why = "the host name does not resolve"
    else:
        why = _short(text)[:200]
    at = f" {where[1]}:{where[2]}" if where else ""
    return f"could not connect to{at} ({why}); check --api-url (or $GITHUB_API_URL) and the network"


def _short(text: str) -> str:
    """The reason of a client failure, whole, on one line (bounded)."""
    return flatten(text)[:500]


def _hint(exc: GithubException) -> str:
    """What to do about a 401 or a 403 (a rate limit's 403 is not the token's fault)."""
    hint = HINTS.get(exc.status)
    message = exc.data.get("message") if isinstance(exc.data, dict) else None
    limited = isinstance(exc, RateLimitExceededException) or "rate limit" in str(message).lower()
    return f" ({hint})" if hint and not limited else ""
