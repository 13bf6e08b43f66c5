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
def remote(what: str, *, timeout: float | None = None) -> Iterator[None]:
    """Turn any client failure into a one-line :class:`RemoteError`; ``timeout``, the client's
    seconds, names a time-out's length."""
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
        detail = _words(flatten(detail), 500) + _hint(exc)
        raise RemoteError(f"{what}: GitHub answered {exc.status}{detail}", exc.status) from None
    except RuntimeError as exc:  # PyGithub refusing a 301 to another host or scheme
        raise RemoteError(f"{what}: {_short(str(exc))}") from None
    except requests.exceptions.Timeout as exc:  # ConnectTimeout, ReadTimeout
        raise RemoteError(f"{what}: {_timed_out(str(exc), timeout)}") from None
    except requests.exceptions.RetryError as exc:
        reason = str(exc.args[0].reason) if exc.args and hasattr(exc.args[0], "reason") else ""
        raise RemoteError(f"{what}: gave up after retries ({_short(reason)})") from None
    except requests.exceptions.ConnectionError as exc:
        text = str(exc)
        if "ReadTimeout" in text or "Read timed out" in text or "ConnectTimeout" in text:
            raise RemoteError(f"{what}: {_timed_out(text, timeout)}") from None
        raise RemoteError(f"{what}: {_unreachable(text)}") from None
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
        why = _words(_short(text), 200)
    at = f" {where[1]}:{where[2]}" if where else ""
    return f"could not connect to{at} ({why}); check --api-url (or $GITHUB_API_URL) and the network"


def _timed_out(text: str, timeout: float | None) -> str:
    """A time-out in one line: which (no connection, or no answer), how long, what to do."""
    where = re.search(r"host='([^']+)', port=(\d+)", text)
    at = f" {where[1]}:{where[2]}" if where else ""
    within = f" within {timeout:g} s" if timeout else ""
    if "ConnectTimeout" in text or "connect timeout" in text.lower():
        what = f"no connection to{at}{within}"
    else:
        what = f"{at.strip() or 'GitHub'} accepted the connection but sent no answer{within}"
    return (
        f"timed out: {what}; check --api-url (or $GITHUB_API_URL) and the network, or give it "
        "longer ($ARTBOT_GITHUB_TIMEOUT)"
    )


def _words(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, cut between words (marked …), never inside one."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:(") + "…"


def _short(text: str) -> str:
    """The reason of a client failure on one line, bounded, cut between words."""
    return _words(flatten(text), 500)


def _hint(exc: GithubException) -> str:
    """What to do about a 401 or a 403 (a rate limit's 403 is not the token's fault)."""
    hint = HINTS.get(exc.status)
    message = exc.data.get("message") if isinstance(exc.data, dict) else None
    limited = isinstance(exc, RateLimitExceededException) or "rate limit" in str(message).lower()
    return f" ({hint})" if hint and not limited else ""
