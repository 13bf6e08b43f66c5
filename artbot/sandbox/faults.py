"""Fault injection for the sandbox: rate limits, 5xx, dropped connections, redirects."""

from __future__ import annotations

import json
import re
import threading
from http import HTTPStatus

from .routes import _Outcome
from .state import (
    FAULT_KINDS,
    RATE_DOCS,
    REDIRECT_KINDS,
    SECONDARY_RATE_LIMIT_MESSAGE,
    Fault,
    _Bucket,
    _error,
)


class _Faults:
    """The part of :class:`GitHubSandbox` that serves failures instead of answers."""

    _lock: threading.RLock
    _faults: list[Fault]
    api_url: str

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

    def _fault_outcome(
        self, fault: Fault, request_id: str, bucket: _Bucket, raw_path: str
    ) -> _Outcome:
        if fault.kind == "drop":
            return _Outcome(0)
        headers = [
            ("Content-Type", "application/json; charset=utf-8"),
            ("X-GitHub-Request-Id", request_id),
        ]
        if fault.kind in REDIRECT_KINDS:
            status = int(fault.kind)
            headers.append(("Location", fault.location or f"{self.api_url}{raw_path}"))
            payload = {"message": HTTPStatus(status).phrase, "url": headers[-1][1]}
            return _Outcome(status, json.dumps(payload).encode(), headers)
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
        return _Outcome(status, json.dumps(payload).encode(), headers)
