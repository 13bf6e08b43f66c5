"""How the adapter (:mod:`artbot.github.client`) asks again: PyGithub's retry, with two rules
of artbot's, and a line on stderr before every long wait.

- A POST is never sent twice blind: a 5xx to a create may come after the issue was made, and so
  may a connection dropped after the request went out; sending it again could file it twice.
  Instead the caller re-lists by marker and looks (GitHub is the source of truth).
- Rate-limit answers (403 secondary / 429) are retried for every method, POST included, after
  Retry-After or a bounded exponential back-off.
- A wait that is long (a time-out spent, or a back-off of a second or more) is said as it
  starts, with what it waits for: ``waiting for GitHub: GET /repos/o/r/issues: no answer within
  15 s (read time-out); asking again in 2 s (try 2)``. A quick retry on the loopback
  sandbox is silent.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from github.GithubRetry import GithubRetry
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError, ReadTimeoutError

# Every write is retried on a rate limit (403 secondary / 429): GitHub did nothing then.
# urllib3's default list leaves out PATCH and POST, so without this a rate-limited checklist
# edit ended the run.
RETRY_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "PATCH", "POST"})
LONG_WAIT_S = 1.0  # a back-off this long or longer is said before it starts


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Retry(GithubRetry):
    """GithubRetry for every method, except that a POST is never sent twice blind; a long wait
    is said (``say``) before it starts. ``timeout`` is the client's, for the message."""

    def __init__(
        self,
        *,
        say: Callable[[str], None] | None = None,
        timeout: float = 15.0,
        tries: int | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("allowed_methods", RETRY_METHODS)
        super().__init__(**kwargs)
        self.say = say or _to_stderr
        self.timeout = timeout
        self.tries = tries if tries is not None else (self.total or 0) + 1

    def new(self, **kw: Any) -> Any:
        kw.update(say=self.say, timeout=self.timeout, tries=self.tries)
        return super().new(**kw)

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        if method == "POST" and status_code >= 500:
            return False
        if status_code == 429 and self.total:
            return True  # with or without Retry-After: back off exponentially (bounded)
        return bool(super().is_retry(method, status_code, has_retry_after))

    def increment(
        self, method: str | None = None, url: str | None = None, *args: Any, **kwargs: Any
    ) -> Any:  # type: ignore[override]
        error = kwargs.get("error")
        if method == "POST" and error is not None and self._is_read_error(error):
            raise error  # the POST may have taken effect: the caller looks before re-creating
        retry = super().increment(method, url, *args, **kwargs)
        response = kwargs.get("response")
        wait = retry.get_backoff_time()
        if response is not None:
            wait = max(wait, retry.get_retry_after(response) or 0.0)
        # urllib3's NewConnectionError (refused, no route) is a ConnectTimeoutError by class.
        refused = isinstance(error, NewConnectionError)
        timed_out = isinstance(error, ReadTimeoutError | ConnectTimeoutError) and not refused
        if timed_out or wait >= LONG_WAIT_S:
            why = self._why(error, response)
            next_try = self.tries - (retry.total or 0)
            path = (url or "").split("?", 1)[0]
            self.say(
                f"waiting for GitHub: {method} {path}: {why}; asking again in {wait:.0f} s "
                f"(try {next_try})"
            )
        return retry

    def _why(self, error: Any, response: Any) -> str:
        if isinstance(error, NewConnectionError):
            return "no connection"
        if isinstance(error, ConnectTimeoutError):
            return f"no connection within {self.timeout:g} s (connect time-out)"
        if isinstance(error, ReadTimeoutError):
            return f"no answer within {self.timeout:g} s (read time-out)"
        if error is not None:
            return f"the connection failed ({type(error).__name__})"
        return f"GitHub answered {getattr(response, 'status', '?')}"
