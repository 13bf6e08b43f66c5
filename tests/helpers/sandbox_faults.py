"""Fault injection for the tests' sandbox (tests/helpers/testsandbox.py): rate limits, 5xx
before or after a write took effect, 429s, dropped connections and redirects, served in place
of the sandbox's answer to the requests a test names."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import urlencode

from artbot.sandbox import GitHubSandbox
from artbot.sandbox.routes import _Outcome
from artbot.sandbox.server import _Request
from artbot.sandbox.state import RATE_DOCS, _Bucket, _error

FAULT_KINDS = ("secondary_rate_limit", "drop")
REDIRECT_KINDS = (301, 302, 307, 308)
SECONDARY_RATE_LIMIT_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID {request_id}."
)


@dataclass
class Fault:
    """A failure served instead of (or, with ``after_write``, after) the real response.

    ``kind`` is an HTTP status (400-599; or a redirect, 301/302/307/308, to
    ``location``, by default the request's own URL), ``"secondary_rate_limit"`` (a 403 whose
    body PyGithub recognises) or ``"drop"`` (the socket is closed without a response).
    """

    method: str
    path_regex: re.Pattern[str]
    kind: int | str
    times: int
    after_write: bool
    retry_after: int | None
    location: str | None = None
    message: str | None = None  # the error body's message (default: the status phrase)

    def matches(self, method: str, path: str) -> bool:
        return self.method in ("*", method) and self.path_regex.search(path) is not None


class FaultInjection(GitHubSandbox):
    """The sandbox, serving failures instead of answers where a test asks for them."""

    _faults: list[Fault]

    def _init_state(self, *args: Any, **kwargs: Any) -> None:
        super()._init_state(*args, **kwargs)
        self._faults = []  # reset() forgets them with the rest of the state

    def inject_fault(
        self,
        method: str,
        path_regex: str,
        kind: int | str,
        times: int = 1,
        after_write: bool = False,
        retry_after: int | None = None,
        location: str | None = None,
        message: str | None = None,
    ) -> Fault:
        """Serve ``kind`` to the next ``times`` requests matching ``method`` and ``path_regex``.

        ``method`` may be ``"*"``; ``path_regex`` is searched in the URL path. With
        ``after_write`` the request is carried out first (a write takes effect) and the client
        still gets the fault. ``retry_after`` adds a ``Retry-After`` header (seconds);
        ``message`` is the error body's message (hostile text, for tests of what is printed).
        """
        valid = kind in (*FAULT_KINDS, *REDIRECT_KINDS) or (isinstance(kind, int) and kind >= 400)
        if not valid or (isinstance(kind, int) and kind > 599):
            raise ValueError(f"unknown fault kind {kind!r}: use 400-599 or {FAULT_KINDS}")
        if times < 1:
            raise ValueError("times must be at least 1")
        fault = Fault(
            method.upper(),
            re.compile(path_regex),
            kind,
            times,
            after_write,
            retry_after,
            location,
            message,
        )
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    @property
    def pending_faults(self) -> list[Fault]:
        with self._lock:
            return list(self._faults)

    def _serve(self, request: _Request, request_id: str, bucket: _Bucket) -> _Outcome:
        # Called under the sandbox's lock, once per request, after its id and bucket are known.
        fault = next((f for f in self._faults if f.matches(request.method, request.path)), None)
        if fault is None:
            return super()._serve(request, request_id, bucket)
        fault.times -= 1
        if fault.times == 0:
            self._faults.remove(fault)
        if fault.after_write:
            super()._serve(request, request_id, bucket)
        return self._fault_outcome(fault, request, request_id, bucket)

    def _fault_outcome(
        self, fault: Fault, request: _Request, request_id: str, bucket: _Bucket
    ) -> _Outcome:
        if fault.kind == "drop":
            return _Outcome(0, fault=True)
        headers = [
            ("Content-Type", "application/json; charset=utf-8"),
            ("X-GitHub-Request-Id", request_id),
        ]
        if fault.kind in REDIRECT_KINDS:
            status = int(fault.kind)
            query = f"?{urlencode(request.query)}" if request.query else ""
            headers.append(("Location", fault.location or f"{self.api_url}{request.path}{query}"))
            payload = {"message": HTTPStatus(status).phrase, "url": headers[-1][1]}
            return _Outcome(status, json.dumps(payload).encode(), headers, fault=True)
        if fault.retry_after is not None:
            headers.append(("Retry-After", str(fault.retry_after)))
        if fault.kind == "secondary_rate_limit" or fault.kind == 429:
            status = 403 if fault.kind == "secondary_rate_limit" else 429
            message = SECONDARY_RATE_LIMIT_MESSAGE.format(request_id=request_id)
            payload = _error(status, message, f"{RATE_DOCS}#about-secondary-rate-limits").payload
            headers += bucket.headers()
        else:
            status = int(fault.kind)
            payload = {"message": fault.message or HTTPStatus(status).phrase}
        return _Outcome(status, json.dumps(payload).encode(), headers, fault=True)
