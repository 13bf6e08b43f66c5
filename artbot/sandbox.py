"""A loopback imitation of the GitHub REST API (version 2022-11-28).

:class:`GitHubSandbox` serves the slice of the API that artbot uses (repositories, issues,
comments, labels, rate limits) over real HTTP on 127.0.0.1, so PyGithub runs unmodified
against it: ``Github(base_url=sandbox.api_url, auth=Auth.Token("any"))``. It imitates
GitHub's JSON shapes, pagination ``Link`` headers, ETags and 304s, rate-limit headers, error
bodies, and the failures a client must survive (5xx before or after a write took effect,
secondary rate limits, 429s, dropped connections) on demand through :meth:`inject_fault`.

Every request is recorded in :attr:`GitHubSandbox.requests` as method, path, query and status.
Tokens are never stored, logged or echoed: a token only selects a rate-limit bucket, through
its hash. State lives in memory and, with ``state_file``, in a JSON file rewritten after every
write, so ``artbot sandbox --state FILE`` keeps its issues across restarts.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import dataclasses
import hashlib
import hmac
import json
import math
import os
import re
import signal
import socket
import sys
import tempfile
import threading
import traceback
import zlib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.message import Message
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple, TextIO
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

API_VERSION = "2022-11-28"
MAX_BODY_CHARS = 65536
MAX_TITLE_CHARS = 256
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100
ANONYMOUS_RATE_LIMIT = 60
DOCS = "https://docs.github.com/rest"
RATE_DOCS = f"{DOCS}/overview/rate-limits-for-the-rest-api"
SECONDARY_RATE_LIMIT_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID {request_id}."
)
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_STATE_FORMAT = "artbot-github-sandbox/1"


class RecordedRequest(NamedTuple):
    """One request as the sandbox saw it; ``status`` is 0 for a dropped connection."""

    method: str
    path: str
    query: dict[str, str]
    status: int


class RequestLog:
    """A thread-safe, append-only record of requests (iterate for a snapshot)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[RecordedRequest] = []

    def append(self, item: RecordedRequest) -> None:
        with self._lock:
            self._items.append(item)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def snapshot(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._items)

    def __iter__(self) -> Iterator[RecordedRequest]:
        return iter(self.snapshot())

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


FAULT_KINDS = ("secondary_rate_limit", "drop")


@dataclass
class Fault:
    """A failure served instead of (or, with ``after_write``, after) the real response.

    ``kind`` is an HTTP status (429 or 500-599), ``"secondary_rate_limit"`` (a 403 whose body
    PyGithub recognises) or ``"drop"`` (the socket is closed without a response).
    """

    method: str
    path_regex: re.Pattern[str]
    kind: int | str
    times: int
    after_write: bool
    retry_after: int | None

    def matches(self, method: str, path: str) -> bool:
        return self.method in ("*", method) and self.path_regex.search(path) is not None


class ApiError(Exception):
    """Raised by a route to answer with a GitHub-shaped error body."""

    def __init__(self, status: int, payload: dict[str, Any]) -> None:
        super().__init__(f"{status} {json.dumps(payload)}")
        self.status = status
        self.payload = payload


def _error(status: int, message: str, doc: str, **extra: Any) -> ApiError:
    return ApiError(
        status, {"message": message, **extra, "documentation_url": doc, "status": str(status)}
    )


def _validation_failed(doc: str, *errors: dict[str, Any]) -> ApiError:
    return _error(422, "Validation Failed", doc, errors=list(errors))


def _field_error(doc: str, resource: str, field_name: str, code: str) -> ApiError:
    return _validation_failed(doc, {"resource": resource, "code": code, "field": field_name})


def _invalid_request(doc: str, detail: str) -> ApiError:
    # GitHub's wording when the request body does not match the endpoint's JSON schema.
    return _error(422, f"Invalid request.\n\n{detail}", doc)


def _too_long(doc: str, resource: str, field_name: str, limit: int) -> ApiError:
    message = f"{field_name} is too long (maximum is {limit} characters)"
    return _validation_failed(
        doc, {"resource": resource, "code": "custom", "field": field_name, "message": message}
    )


# --- state -------------------------------------------------------------------------------


@dataclass
class _Label:
    id: int
    name: str
    color: str
    description: str | None


@dataclass
class _Comment:
    id: int
    issue_number: int
    body: str
    user: str
    created_at: str
    updated_at: str


@dataclass
class _Issue:
    id: int
    number: int
    title: str
    body: str | None
    user: str
    created_at: str
    updated_at: str
    state: str = "open"
    state_reason: str | None = None
    closed_at: str | None = None
    closed_by: str | None = None
    label_ids: list[int] = field(default_factory=list)
    assignees: list[str] = field(default_factory=list)
    comments: int = 0
    pull_request: bool = False
    deleted: bool = False


@dataclass
class _Repo:
    id: int
    owner: str
    name: str
    description: str | None
    created_at: str
    next_number: int = 1
    labels: dict[int, _Label] = field(default_factory=dict)
    issues: dict[int, _Issue] = field(default_factory=dict)
    comments: dict[int, _Comment] = field(default_factory=dict)

    def label_named(self, name: str) -> _Label | None:
        folded = name.casefold()
        return next((lb for lb in self.labels.values() if lb.name.casefold() == folded), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "owner": self.owner,
            "name": self.name,
            "description": self.description,
            "created_at": self.created_at,
            "next_number": self.next_number,
            "labels": [dataclasses.asdict(x) for x in self.labels.values()],
            "issues": [dataclasses.asdict(x) for x in self.issues.values()],
            "comments": [dataclasses.asdict(x) for x in self.comments.values()],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> _Repo:
        labels = [_Label(**x) for x in data["labels"]]
        issues = [_Issue(**x) for x in data["issues"]]
        comments = [_Comment(**x) for x in data["comments"]]
        return cls(
            id=data["id"],
            owner=data["owner"],
            name=data["name"],
            description=data["description"],
            created_at=data["created_at"],
            next_number=data["next_number"],
            labels={x.id: x for x in labels},
            issues={x.number: x for x in issues},
            comments={x.id: x for x in comments},
        )


@dataclass
class _Bucket:
    limit: int
    reset: int
    anonymous: bool
    used: int = 0

    @property
    def remaining(self) -> int:
        return max(self.limit - self.used, 0)

    def headers(self) -> list[tuple[str, str]]:
        return [
            ("X-RateLimit-Limit", str(self.limit)),
            ("X-RateLimit-Remaining", str(self.remaining)),
            ("X-RateLimit-Reset", str(self.reset)),
            ("X-RateLimit-Used", str(self.used)),
            ("X-RateLimit-Resource", "core"),
        ]

    def as_json(self) -> dict[str, int]:
        return {
            "limit": self.limit,
            "remaining": self.remaining,
            "reset": self.reset,
            "used": self.used,
        }


# --- request plumbing --------------------------------------------------------------------


@dataclass
class _Call:
    method: str
    path: str
    params: dict[str, str]
    query: dict[str, str]
    body: Any
    login: str | None
    doc: str
    bucket: _Bucket


@dataclass
class _Reply:
    status: int
    payload: Any
    headers: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class _Outcome:
    status: int  # 0: drop the connection
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class _Route:
    method: str
    pattern: re.Pattern[str]
    handler: Callable[[_Call], _Reply]
    doc: str


def _route_pattern(template: str) -> re.Pattern[str]:
    numeric = {"number", "comment_id"}

    def group(m: re.Match[str]) -> str:
        return f"(?P<{m[1]}>\\d+)" if m[1] in numeric else f"(?P<{m[1]}>[^/]+)"

    return re.compile(re.sub(r"\{(\w+)\}", group, template) + "/?")


def _parse_time(value: str) -> datetime:
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _int_param(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _node_id(prefix: str, kind: str, number: int) -> str:
    return prefix + "_" + base64.b64encode(f"0{kind}{number}".encode()).decode().rstrip("=")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default joins every handler thread on close, which hangs on idle keep-alive clients.
    block_on_close = False

    def __init__(self, address: tuple[str, int], sandbox: GitHubSandbox) -> None:
        super().__init__(address, _Handler)
        self.sandbox = sandbox
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def track(self, conn: socket.socket, *, add: bool) -> None:
        with self._open_lock:
            if add:
                self._open.add(conn)
            else:
                self._open.discard(conn)

    def close_connections(self) -> None:
        with self._open_lock:
            for conn in self._open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "GitHub.com"
    sys_version = ""
    timeout = 30
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr line: the sandbox keeps its own log, without headers."""

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without this, Nagle's algorithm and the
        # client's delayed ACK add ~40 ms to every response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, add=False)

    def _handle(self) -> None:
        length = _int_param(self.headers.get("Content-Length"), 0)
        raw = self.rfile.read(length) if length > 0 else b""
        out = self.server.sandbox._respond(self.command, self.path, raw, self.headers)
        if out.status == 0:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.send_response(out.status)
        for name, value in out.headers:
            self.send_header(name, value)
        if out.status != 304:
            self.send_header("Content-Length", str(len(out.body)))
        self.end_headers()
        if out.body:
            self.wfile.write(out.body)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _handle


# --- the sandbox -------------------------------------------------------------------------


class GitHubSandbox:
    """A local GitHub REST API on 127.0.0.1; use as a context manager or start()/stop().

    The socket is bound at construction, so :attr:`api_url` is known before :meth:`start`.
    Any token is accepted unless ``tokens`` lists the valid ones; ``login`` is the user every
    token authenticates as. ``clock`` (returning an aware datetime) makes timestamps
    deterministic in tests.
    """

    def __init__(
        self,
        port: int = 0,
        state_file: str | Path | None = None,
        *,
        login: str = "artbot-sandbox",
        tokens: Collection[str] | None = None,
        rate_limit: int = 5000,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.login = login
        self.rate_limit = rate_limit
        self.requests = RequestLog()
        self._tokens = list(tokens) if tokens is not None else None
        self._clock = clock or (lambda: datetime.now(UTC))
        self._state_file = Path(state_file) if state_file is not None else None
        self._lock = threading.RLock()
        self._repos: dict[str, _Repo] = {}
        self._next_id = 1
        self._faults: list[Fault] = []
        self._buckets: dict[str, _Bucket] = {}
        self._request_count = 0
        if self._state_file is not None and self._state_file.exists():
            self._load(self._state_file)
        self._server = _Server(("127.0.0.1", port), self)
        self._thread: threading.Thread | None = None
        self._routes = self._build_routes()

    # lifecycle

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def api_url(self) -> str:
        """The API root, PyGithub's ``base_url``; web (html_url) links use the same host."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> GitHubSandbox:
        if self._thread is not None:
            raise RuntimeError("sandbox already started")
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},  # how long stop() may wait; the default is 0.5 s
            name=f"github-sandbox-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.close_connections()
        self._server.server_close()

    def __enter__(self) -> GitHubSandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # helpers for tests and the demo: they act on state directly, unlogged

    def create_repo(self, owner: str, name: str, description: str | None = None) -> None:
        """Create ``owner/name`` (a no-op if it exists, so a persisted sandbox can rerun it)."""
        with self._lock:
            key = f"{owner}/{name}".casefold()
            if key not in self._repos:
                self._repos[key] = _Repo(self._new_id(), owner, name, description, self._stamp())
                self._save()

    def seed_issue(
        self,
        owner: str,
        name: str,
        title: str,
        body: str | None,
        labels: Sequence[str] = (),
        state: str = "open",
        state_reason: str | None = None,
        pull_request: bool = False,
        user: str | None = None,
        number: int | None = None,
    ) -> int:
        """Add an issue (or, with ``pull_request``, a pull request) and return its number.

        ``number`` skips ahead to that number (as if earlier issues existed elsewhere); it
        may not reuse or go below a number already given out.
        """
        with self._lock:
            repo = self._repo_or_raise(owner, name)
            if number is not None:
                if number < repo.next_number:
                    raise ValueError(f"#{number} is taken; next free is #{repo.next_number}")
                repo.next_number = number
            changes: dict[str, Any] = {"title": title, "body": body, "labels": list(labels)}
            issue = self._create_issue(repo, changes, user or self.login, DOCS)
            issue.pull_request = pull_request
            if state != "open" or state_reason is not None:
                change = {"state": state, "state_reason": state_reason}
                self._edit_issue(repo, issue, change, user or self.login, DOCS)
            self._save()
            return issue.number

    def seed_comment(
        self, owner: str, name: str, number: int, body: str, user: str | None = None
    ) -> int:
        """Add a comment to an issue, as ``user`` (default: the sandbox login); return its id."""
        with self._lock:
            repo = self._repo_or_raise(owner, name)
            issue = self._issue(repo, number, DOCS)
            comment = self._add_comment(repo, issue, {"body": body}, user or self.login)
            self._save()
            return comment.id

    def get_issue(self, owner: str, name: str, number: int) -> dict[str, Any]:
        """The issue as ``GET /repos/{owner}/{name}/issues/{number}`` would return it."""
        with self._lock:
            repo = self._repo_or_raise(owner, name)
            return self._issue_json(repo, self._issue(repo, number, DOCS), full=True)

    def edit_issue(self, owner: str, name: str, number: int, **changes: Any) -> None:
        """Edit an issue as a maintainer would on the web; ``changes`` are PATCH body keys."""
        with self._lock:
            repo = self._repo_or_raise(owner, name)
            issue = self._issue(repo, number, DOCS)
            self._edit_issue(repo, issue, changes, self.login, DOCS)
            self._save()

    def set_issue_state(
        self, owner: str, name: str, number: int, state: str, state_reason: str | None = None
    ) -> None:
        """Close or reopen an issue behind the client's back."""
        self.edit_issue(owner, name, number, state=state, state_reason=state_reason)

    def delete_issue(self, owner: str, name: str, number: int) -> None:
        """Delete an issue: from now on it answers 410 Gone and leaves the lists."""
        with self._lock:
            repo = self._repo_or_raise(owner, name)
            self._issue(repo, number, DOCS).deleted = True
            self._save()

    def inject_fault(
        self,
        method: str,
        path_regex: str,
        kind: int | str,
        times: int = 1,
        after_write: bool = False,
        retry_after: int | None = None,
    ) -> Fault:
        """Serve ``kind`` to the next ``times`` requests matching ``method`` and ``path_regex``.

        ``method`` may be ``"*"``; ``path_regex`` is searched in the URL path. With
        ``after_write`` the request is carried out first (a write takes effect) and the client
        still gets the fault. ``retry_after`` adds a ``Retry-After`` header (seconds).
        """
        valid = kind in FAULT_KINDS or (isinstance(kind, int) and (kind == 429 or kind >= 500))
        if not valid or (isinstance(kind, int) and kind > 599):
            raise ValueError(f"unknown fault kind {kind!r}: use 429, 500-599 or {FAULT_KINDS}")
        if times < 1:
            raise ValueError("times must be at least 1")
        fault = Fault(method.upper(), re.compile(path_regex), kind, times, after_write, retry_after)
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

    # request handling

    def _respond(self, method: str, raw_path: str, raw_body: bytes, headers: Message) -> _Outcome:
        split = urlsplit(raw_path)
        path = split.path
        query = {
            k: v[-1]
            for k, v in parse_qs(split.query, keep_blank_values=True).items()
            if k != "access_token"  # a token in the URL must not reach the log
        }
        with self._lock:
            self._request_count += 1
            request_id = (
                f"5A4B:{os.getpid() & 0xFFFF:04X}:{self._request_count:06X}:{self.port:04X}"
            )
            bucket = self._bucket(headers.get("Authorization"))
            fault = next((f for f in self._faults if f.matches(method, path)), None)
            if fault is not None:
                fault.times -= 1
                if fault.times == 0:
                    self._faults.remove(fault)
            if fault is not None and not fault.after_write:
                out = self._fault_outcome(fault, request_id, bucket)
            else:
                out = self._serve(method, path, query, raw_body, headers, request_id, bucket)
                if fault is not None:
                    out = self._fault_outcome(fault, request_id, bucket)
        self.requests.append(RecordedRequest(method, path, query, out.status))
        return out

    def _serve(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        raw_body: bytes,
        headers: Message,
        request_id: str,
        bucket: _Bucket,
    ) -> _Outcome:
        counted = path.rstrip("/") != "/rate_limit"  # as on GitHub, asking costs nothing
        try:
            if counted and bucket.remaining == 0:
                counted = False  # a refusal does not push "used" past the limit
                who = "127.0.0.1" if bucket.anonymous else f"user ID {self._user_id(self.login)}"
                raise _error(403, f"API rate limit exceeded for {who}.", RATE_DOCS)
            reply = self._dispatch(method, path, query, raw_body, headers, bucket)
        except ApiError as exc:
            reply = _Reply(exc.status, exc.payload)
        except Exception:  # a sandbox bug: answer like GitHub would, and show the traceback
            traceback.print_exc()
            reply = _Reply(500, {"message": "Server Error"})
        body = b"" if reply.payload is None else json.dumps(reply.payload).encode()
        out_headers = [
            ("Content-Type", "application/json; charset=utf-8"),
            ("X-GitHub-Api-Version-Selected", API_VERSION),
            ("X-GitHub-Media-Type", "github.v3; format=json"),
            ("X-GitHub-Request-Id", request_id),
            ("Vary", "Accept, Authorization, Cookie, X-GitHub-OTP"),
            *reply.headers,
        ]
        status = reply.status
        if method == "GET" and status == 200:
            etag = f'W/"{hashlib.sha256(body).hexdigest()}"'
            out_headers += [("ETag", etag), ("Cache-Control", "private, max-age=60, s-maxage=60")]
            if _etag_matches(headers.get("If-None-Match"), etag):
                # A 304 does not count against the rate limit, as on GitHub.
                status, body, counted = 304, b"", False
        if counted:
            bucket.used += 1
        if method != "GET" and status < 400:
            self._save()
        return _Outcome(status, body, out_headers + bucket.headers())

    def _fault_outcome(self, fault: Fault, request_id: str, bucket: _Bucket) -> _Outcome:
        if fault.kind == "drop":
            return _Outcome(0)
        headers = [
            ("Content-Type", "application/json; charset=utf-8"),
            ("X-GitHub-Request-Id", request_id),
        ]
        if fault.retry_after is not None:
            headers.append(("Retry-After", str(fault.retry_after)))
        if fault.kind == "secondary_rate_limit" or fault.kind == 429:
            status = 403 if fault.kind == "secondary_rate_limit" else 429
            message = SECONDARY_RATE_LIMIT_MESSAGE.format(request_id=request_id)
            payload = _error(status, message, f"{RATE_DOCS}#about-secondary-rate-limits").payload
            headers += bucket.headers()
        else:
            status = int(fault.kind)
            payload = {"message": HTTPStatus(status).phrase}
        return _Outcome(status, json.dumps(payload).encode(), headers)

    def _dispatch(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        raw_body: bytes,
        headers: Message,
        bucket: _Bucket,
    ) -> _Reply:
        version = headers.get("X-GitHub-Api-Version")
        if version is not None and version != API_VERSION:
            raise _error(
                400,
                f"API version {version} is not supported.",
                f"{DOCS}/about-the-rest-api/api-versions",
            )
        login = self._authenticate(headers.get("Authorization"))
        for route in self._routes:
            m = route.pattern.fullmatch(path)
            if m is None or route.method != method:
                continue
            if method != "GET" and login is None:
                raise _error(401, "Requires authentication", route.doc)
            body = None
            if raw_body:
                try:
                    body = json.loads(raw_body)
                except ValueError:
                    raise _error(400, "Problems parsing JSON", route.doc) from None
            params = {k: unquote(v) for k, v in m.groupdict().items()}
            call = _Call(method, path, params, query, body, login, route.doc, bucket)
            return route.handler(call)
        raise _error(404, "Not Found", DOCS)

    def _authenticate(self, authorization: str | None) -> str | None:
        if authorization is None:
            return None
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        valid_scheme = scheme.lower() in ("token", "bearer") and token
        if not valid_scheme or (
            self._tokens is not None
            and not any(hmac.compare_digest(token, t) for t in self._tokens)
        ):
            raise _error(401, "Bad credentials", DOCS)
        return self.login

    def _bucket(self, authorization: str | None) -> _Bucket:
        # Keyed by a hash: the token itself is never kept.
        key = hashlib.sha256((authorization or "").encode()).hexdigest()
        now = int(self._now().timestamp())
        bucket = self._buckets.get(key)
        if bucket is None or now >= bucket.reset:
            limit = self.rate_limit if authorization else ANONYMOUS_RATE_LIMIT
            bucket = self._buckets[key] = _Bucket(limit, now + 3600, not authorization)
        return bucket

    # routes

    def _build_routes(self) -> list[_Route]:
        # (method, path template, handler, the anchor of its page in GitHub's REST docs)
        repo = "/repos/{owner}/{repo}"
        issue = repo + "/issues/{number}"
        comment = repo + "/issues/comments/{comment_id}"
        i, c, lb = "issues/issues#", "issues/comments#", "issues/labels#"
        table: list[tuple[str, str, Callable[[_Call], _Reply], str]] = [
            ("GET", "/rate_limit", self._get_rate_limit, "rate-limit/rate-limit"),
            ("GET", repo, self._get_repo, "repos/repos#get-a-repository"),
            ("GET", repo + "/issues", self._list_issues, i + "list-repository-issues"),
            ("POST", repo + "/issues", self._post_issue, i + "create-an-issue"),
            ("GET", issue, self._get_issue, i + "get-an-issue"),
            ("PATCH", issue, self._patch_issue, i + "update-an-issue"),
            ("GET", issue + "/comments", self._list_comments, c + "list-issue-comments"),
            ("POST", issue + "/comments", self._post_comment, c + "create-an-issue-comment"),
            ("GET", comment, self._get_comment, c + "get-an-issue-comment"),
            ("PATCH", comment, self._patch_comment, c + "update-an-issue-comment"),
            ("POST", issue + "/labels", self._add_issue_labels, lb + "add-labels-to-an-issue"),
            ("GET", repo + "/labels", self._list_labels, lb + "list-labels-for-a-repository"),
            ("POST", repo + "/labels", self._post_label, lb + "create-a-label"),
            ("GET", repo + "/labels/{name}", self._get_label, lb + "get-a-label"),
        ]  # fmt: skip
        return [_Route(m, _route_pattern(t), h, f"{DOCS}/{d}") for m, t, h, d in table]

    def _get_rate_limit(self, call: _Call) -> _Reply:
        core = call.bucket.as_json()
        search = {"limit": 30, "remaining": 30, "reset": core["reset"], "used": 0}
        graphql = {**core, "used": 0, "remaining": core["limit"]}
        resources = {"core": core, "search": search, "graphql": graphql}
        return _Reply(200, {"resources": resources, "rate": core})

    def _get_repo(self, call: _Call) -> _Reply:
        return _Reply(200, self._repo_json(self._repo(call), authenticated=call.login is not None))

    def _list_issues(self, call: _Call) -> _Reply:
        repo, q = self._repo(call), call.query
        state = q.get("state", "open")
        sort = q.get("sort", "created")
        direction = q.get("direction", "desc")
        for name, value, allowed in (
            ("state", state, ("open", "closed", "all")),
            ("sort", sort, ("created", "updated", "comments")),
            ("direction", direction, ("asc", "desc")),
        ):
            if value not in allowed:
                raise _field_error(call.doc, "Search", name, "invalid")
        wanted = {x.strip().casefold() for x in q.get("labels", "").split(",") if x.strip()}
        since = self._since(call)
        issues = []
        for issue in repo.issues.values():
            names = {repo.labels[i].name.casefold() for i in issue.label_ids}
            if (
                issue.deleted
                or (state != "all" and issue.state != state)
                or not wanted <= names
                or (since is not None and _parse_time(issue.updated_at) < since)
            ):
                continue
            issues.append(issue)
        key: Callable[[_Issue], tuple[Any, int]] = {
            "created": lambda i: (i.created_at, i.number),
            "updated": lambda i: (i.updated_at, i.number),
            "comments": lambda i: (i.comments, i.number),
        }[sort]
        issues.sort(key=key, reverse=direction == "desc")
        return self._paginate(call, [self._issue_json(repo, i, full=False) for i in issues])

    def _post_issue(self, call: _Call) -> _Reply:
        repo = self._repo(call)
        issue = self._create_issue(repo, _object(call), call.login or self.login, call.doc)
        data = self._issue_json(repo, issue, full=True)
        return _Reply(201, data, [("Location", data["url"])])

    def _get_issue(self, call: _Call) -> _Reply:
        repo, issue = self._repo_issue(call)
        return _Reply(200, self._issue_json(repo, issue, full=True))

    def _patch_issue(self, call: _Call) -> _Reply:
        repo, issue = self._repo_issue(call)
        self._edit_issue(repo, issue, _object(call), call.login or self.login, call.doc)
        return _Reply(200, self._issue_json(repo, issue, full=True))

    def _list_comments(self, call: _Call) -> _Reply:
        repo, issue = self._repo_issue(call)
        since = self._since(call)
        comments = [
            self._comment_json(repo, c)
            for c in sorted(repo.comments.values(), key=lambda c: c.id)
            if c.issue_number == issue.number
            and (since is None or _parse_time(c.updated_at) >= since)
        ]
        return self._paginate(call, comments)

    def _post_comment(self, call: _Call) -> _Reply:
        repo, issue = self._repo_issue(call)
        comment = self._add_comment(repo, issue, _object(call), call.login or self.login, call.doc)
        data = self._comment_json(repo, comment)
        return _Reply(201, data, [("Location", data["url"])])

    def _get_comment(self, call: _Call) -> _Reply:
        repo = self._repo(call)
        return _Reply(200, self._comment_json(repo, self._comment(repo, call)))

    def _patch_comment(self, call: _Call) -> _Reply:
        repo = self._repo(call)
        comment = self._comment(repo, call)
        body = _comment_body(_object(call), call.doc)
        if body != comment.body:
            comment.body = body
            comment.updated_at = self._later(comment.updated_at)
        return _Reply(200, self._comment_json(repo, comment))

    def _add_issue_labels(self, call: _Call) -> _Reply:
        repo, issue = self._repo_issue(call)
        names = [repo.labels[i].name for i in issue.label_ids] + _label_list(call.body, call.doc)
        self._edit_issue(repo, issue, {"labels": names}, call.login or self.login, call.doc)
        return _Reply(200, self._labels_json(repo, issue.label_ids))

    def _list_labels(self, call: _Call) -> _Reply:
        repo = self._repo(call)
        return self._paginate(call, self._labels_json(repo, list(repo.labels)))

    def _post_label(self, call: _Call) -> _Reply:
        repo = self._repo(call)
        body = _object(call)
        if "name" not in body:
            raise _invalid_request(call.doc, '"name" wasn\'t supplied.')
        name = self._label_name(repo, body["name"], call.doc)
        color = str(body.get("color", "ededed")).removeprefix("#").lower()
        if not re.fullmatch(r"[0-9a-f]{6}", color):
            raise _field_error(call.doc, "Label", "color", "invalid")
        description = body.get("description")
        if description is not None and len(str(description)) > 100:
            raise _too_long(call.doc, "Label", "description", 100)
        label = _Label(self._new_id(), name, color, description)
        repo.labels[label.id] = label
        data = self._label_json(repo, label)
        return _Reply(201, data, [("Location", data["url"])])

    def _get_label(self, call: _Call) -> _Reply:
        repo = self._repo(call)
        return _Reply(200, self._label_json(repo, self._label(repo, call)))

    # lookups

    def _repo_or_raise(self, owner: str, name: str) -> _Repo:
        repo = self._repos.get(f"{owner}/{name}".casefold())
        if repo is None:
            raise KeyError(f"no repository {owner}/{name} in the sandbox; call create_repo first")
        return repo

    def _repo(self, call: _Call) -> _Repo:
        repo = self._repos.get(f"{call.params['owner']}/{call.params['repo']}".casefold())
        if repo is None:
            raise _error(404, "Not Found", call.doc)
        return repo

    def _repo_issue(self, call: _Call) -> tuple[_Repo, _Issue]:
        repo = self._repo(call)
        return repo, self._issue(repo, int(call.params["number"]), call.doc)

    def _issue(self, repo: _Repo, number: int, doc: str) -> _Issue:
        issue = repo.issues.get(number)
        if issue is None:
            raise _error(404, "Not Found", doc)
        if issue.deleted:
            raise _error(410, "This issue was deleted", doc)
        return issue

    def _comment(self, repo: _Repo, call: _Call) -> _Comment:
        comment = repo.comments.get(int(call.params["comment_id"]))
        if comment is None:
            raise _error(404, "Not Found", call.doc)
        return comment

    def _label(self, repo: _Repo, call: _Call) -> _Label:
        label = repo.label_named(call.params["name"])
        if label is None:
            raise _error(404, "Not Found", call.doc)
        return label

    def _since(self, call: _Call) -> datetime | None:
        value = call.query.get("since")
        if value is None:
            return None
        try:
            return _parse_time(value)
        except ValueError:
            raise _field_error(call.doc, "Search", "since", "invalid") from None

    # mutations

    def _create_issue(self, repo: _Repo, body: Mapping[str, Any], user: str, doc: str) -> _Issue:
        if "title" not in body:
            raise _invalid_request(doc, '"title" wasn\'t supplied.')
        now = self._stamp()
        issue = _Issue(self._new_id(), repo.next_number, "", None, user, now, now)
        # Validate by editing a draft first, so a rejected create leaves no trace.
        self._edit_issue(repo, issue, body, user, doc, new=True)
        repo.next_number += 1
        repo.issues[issue.number] = issue
        return issue

    def _edit_issue(
        self,
        repo: _Repo,
        issue: _Issue,
        body: Mapping[str, Any],
        actor: str,
        doc: str,
        new: bool = False,
    ) -> None:
        """Validate every change first, then apply them together; bump updated_at if any."""
        changes: dict[str, Any] = {}
        if "title" in body:
            title = body["title"]
            if not isinstance(title, (str, int)) or isinstance(title, bool):
                raise _invalid_request(doc, 'For "title", value is not a string or integer.')
            if not str(title).strip():
                raise _field_error(doc, "Issue", "title", "missing_field")
            if len(str(title)) > MAX_TITLE_CHARS:
                raise _too_long(doc, "Issue", "title", MAX_TITLE_CHARS)
            changes["title"] = str(title)
        if "body" in body:
            text = body["body"]
            if text is not None and not isinstance(text, str):
                raise _invalid_request(doc, 'For "body", value is not a string or null.')
            if text is not None and len(text) > MAX_BODY_CHARS:
                raise _too_long(doc, "Issue", "body", MAX_BODY_CHARS)
            changes["body"] = text
        label_names = _label_list(body["labels"], doc) if "labels" in body else None
        for name in label_names or []:
            if repo.label_named(name) is None:
                self._label_name(repo, name, doc)
        assignees = body.get("assignees")
        if assignees is None and body.get("assignee") is not None:
            assignees = [body["assignee"]]
        if assignees is not None or "assignee" in body:
            if not isinstance(assignees or [], list) or not all(
                isinstance(a, str) for a in assignees or []
            ):
                raise _invalid_request(doc, 'For "assignees", value is not an array of strings.')
            changes["assignees"] = list(dict.fromkeys(assignees or []))
        if body.get("milestone") not in (None, ""):
            # The sandbox has no milestones, so any milestone number is unknown.
            raise _field_error(doc, "Issue", "milestone", "invalid")
        state = body.get("state", issue.state)
        reason = body.get("state_reason")
        if state not in ("open", "closed"):
            raise _invalid_request(doc, f'For "state", {state!r} is not one of open, closed.')
        if reason not in (None, "completed", "not_planned", "duplicate", "reopened"):
            raise _invalid_request(doc, f'For "state_reason", {reason!r} is not a valid reason.')
        now_closed = state == "closed"
        if now_closed and issue.state == "open":
            changes.update(state="closed", state_reason=reason or "completed", closed_by=actor)
        elif not now_closed and issue.state == "closed":
            changes.update(state="open", state_reason="reopened", closed_at=None, closed_by=None)
        elif now_closed and reason not in (None, "reopened"):
            changes["state_reason"] = reason
        if label_names is not None:  # only now, so a rejected edit creates no labels
            changes["label_ids"] = self._label_ids(repo, label_names)
        changed = {k: v for k, v in changes.items() if getattr(issue, k) != v}
        if not changed:
            return
        for key, value in changed.items():
            setattr(issue, key, value)
        if not new:
            issue.updated_at = self._later(issue.updated_at)
        if changed.get("state") == "closed":
            issue.closed_at = issue.updated_at

    def _add_comment(
        self, repo: _Repo, issue: _Issue, body: Mapping[str, Any], user: str, doc: str = DOCS
    ) -> _Comment:
        text = _comment_body(body, doc)
        now = self._stamp()
        comment = _Comment(self._new_id(), issue.number, text, user, now, now)
        repo.comments[comment.id] = comment
        issue.comments += 1
        issue.updated_at = self._later(issue.updated_at)
        return comment

    def _label_ids(self, repo: _Repo, names: list[str]) -> list[int]:
        # Like GitHub, naming a label that does not exist yet creates it.
        ids: list[int] = []
        for name in names:
            label = repo.label_named(name)
            if label is None:
                label = _Label(self._new_id(), name.strip(), "ededed", None)
                repo.labels[label.id] = label
            if label.id not in ids:
                ids.append(label.id)
        return ids

    def _label_name(self, repo: _Repo, name: Any, doc: str) -> str:
        if not isinstance(name, str) or not name.strip():
            raise _field_error(doc, "Label", "name", "missing_field")
        name = name.strip()
        if len(name) > 50:
            raise _too_long(doc, "Label", "name", 50)
        if repo.label_named(name) is not None:
            raise _field_error(doc, "Label", "name", "already_exists")
        return name

    # rendering

    def _repo_api(self, repo: _Repo) -> str:
        return f"{self.api_url}/repos/{repo.owner}/{repo.name}"

    def _user_id(self, login: str) -> int:
        return zlib.crc32(login.casefold().encode()) & 0x7FFFFFFF or 1

    def _user_json(self, login: str, kind: str = "User") -> dict[str, Any]:
        uid = self._user_id(login)
        api = f"{self.api_url}/users/{login}"
        return {
            "login": login,
            "id": uid,
            "node_id": _node_id("U", "User", uid),
            "avatar_url": f"{self.api_url}/avatars/u/{uid}?v=4",
            "gravatar_id": "",
            "url": api,
            "html_url": f"{self.api_url}/{login}",
            "followers_url": f"{api}/followers",
            "following_url": f"{api}/following{{/other_user}}",
            "gists_url": f"{api}/gists{{/gist_id}}",
            "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/subscriptions",
            "organizations_url": f"{api}/orgs",
            "repos_url": f"{api}/repos",
            "events_url": f"{api}/events{{/privacy}}",
            "received_events_url": f"{api}/received_events",
            "type": kind,
            "user_view_type": "public",
            "site_admin": False,
        }

    def _association(self, repo: _Repo, login: str) -> str:
        if login.casefold() == repo.owner.casefold():
            return "OWNER"
        return "COLLABORATOR" if login == self.login else "NONE"

    def _repo_json(self, repo: _Repo, authenticated: bool) -> dict[str, Any]:
        api = self._repo_api(repo)
        web = f"{self.api_url}/{repo.owner}/{repo.name}"
        host = f"127.0.0.1:{self.port}"
        open_count = sum(1 for i in repo.issues.values() if i.state == "open" and not i.deleted)
        owner_kind = "User" if repo.owner.casefold() == self.login.casefold() else "Organization"
        templates = {
            "archive": "/{archive_format}{/ref}", "assignees": "/assignees{/user}",
            "blobs": "/git/blobs{/sha}", "branches": "/branches{/branch}",
            "collaborators": "/collaborators{/collaborator}", "comments": "/comments{/number}",
            "commits": "/commits{/sha}", "compare": "/compare/{base}...{head}",
            "contents": "/contents/{+path}", "contributors": "/contributors",
            "deployments": "/deployments", "downloads": "/downloads", "events": "/events",
            "forks": "/forks", "git_commits": "/git/commits{/sha}", "git_refs": "/git/refs{/sha}",
            "git_tags": "/git/tags{/sha}", "hooks": "/hooks",
            "issue_comment": "/issues/comments{/number}", "issue_events": "/issues/events{/number}",
            "issues": "/issues{/number}", "keys": "/keys{/key_id}", "labels": "/labels{/name}",
            "languages": "/languages", "merges": "/merges", "milestones": "/milestones{/number}",
            "notifications": "/notifications{?since,all,participating}",
            "pulls": "/pulls{/number}", "releases": "/releases{/id}",
            "stargazers": "/stargazers", "statuses": "/statuses/{sha}",
            "subscribers": "/subscribers", "subscription": "/subscription", "tags": "/tags",
            "teams": "/teams", "trees": "/git/trees{/sha}",
        }  # fmt: skip
        data: dict[str, Any] = {
            "id": repo.id,
            "node_id": _node_id("R", "Repository", repo.id),
            "name": repo.name,
            "full_name": f"{repo.owner}/{repo.name}",
            "private": False,
            "owner": self._user_json(repo.owner, owner_kind),
            "html_url": web,
            "description": repo.description,
            "fork": False,
            "url": api,
            **{f"{k}_url": api + v for k, v in templates.items()},
            "git_url": f"git://{host}/{repo.owner}/{repo.name}.git",
            "ssh_url": f"git@{host}:{repo.owner}/{repo.name}.git",
            "clone_url": f"{web}.git",
            "svn_url": web,
            "mirror_url": None,
            "homepage": None,
            "language": None,
            "forks_count": 0,
            "stargazers_count": 0,
            "watchers_count": 0,
            "size": 0,
            "default_branch": "main",
            "open_issues_count": open_count,
            "is_template": False,
            "topics": [],
            "has_issues": True,
            "has_projects": True,
            "has_wiki": True,
            "has_pages": False,
            "has_downloads": True,
            "has_discussions": False,
            "archived": False,
            "disabled": False,
            "visibility": "public",
            "pushed_at": repo.created_at,
            "created_at": repo.created_at,
            "updated_at": repo.created_at,
            "allow_forking": True,
            "web_commit_signoff_required": False,
            "license": None,
            "forks": 0,
            "open_issues": open_count,
            "watchers": 0,
            "subscribers_count": 0,
            "network_count": 0,
        }
        if authenticated:
            data["permissions"] = dict.fromkeys(
                ("admin", "maintain", "push", "triage", "pull"), True
            )
        return data

    def _label_json(self, repo: _Repo, label: _Label, embedded: bool = False) -> dict[str, Any]:
        data = {
            "id": label.id,
            "node_id": _node_id("LA", "Label", label.id),
            "url": f"{self._repo_api(repo)}/labels/{quote(label.name, safe='')}",
            "name": label.name,
            "color": label.color,
            "default": False,
            "description": label.description,
            "archived_at": None,
            "archived_by": None,
        }
        if embedded:  # the published schema of a label inside an issue has no archived_at
            del data["archived_at"]
        return data

    def _labels_json(
        self, repo: _Repo, ids: Sequence[int], embedded: bool = False
    ) -> list[dict[str, Any]]:
        labels = sorted((repo.labels[i] for i in ids), key=lambda lb: lb.name.casefold())
        return [self._label_json(repo, lb, embedded) for lb in labels]

    def _reactions(self, url: str) -> dict[str, Any]:
        counts = ("+1", "-1", "laugh", "hooray", "confused", "heart", "rocket", "eyes")
        return {"url": f"{url}/reactions", "total_count": 0, **dict.fromkeys(counts, 0)}

    def _issue_json(self, repo: _Repo, issue: _Issue, full: bool) -> dict[str, Any]:
        api = self._repo_api(repo)
        url = f"{api}/issues/{issue.number}"
        kind = "pull" if issue.pull_request else "issues"
        html = f"{self.api_url}/{repo.owner}/{repo.name}/{kind}/{issue.number}"
        assignees = [self._user_json(a) for a in issue.assignees]
        data: dict[str, Any] = {
            "url": url,
            "repository_url": api,
            "labels_url": f"{url}/labels{{/name}}",
            "comments_url": f"{url}/comments",
            "events_url": f"{url}/events",
            "html_url": html,
            "id": issue.id,
            "node_id": _node_id("PR" if issue.pull_request else "I", "Issue", issue.id),
            "number": issue.number,
            "title": issue.title,
            "user": self._user_json(issue.user),
            "labels": self._labels_json(repo, issue.label_ids, embedded=True),
            "state": issue.state,
            "locked": False,
            "assignee": assignees[0] if assignees else None,
            "assignees": assignees,
            "milestone": None,
            "comments": issue.comments,
            "created_at": issue.created_at,
            "updated_at": issue.updated_at,
            "closed_at": issue.closed_at,
            "author_association": self._association(repo, issue.user),
            "type": None,
            "active_lock_reason": None,
            "sub_issues_summary": {"total": 0, "completed": 0, "percent_completed": 0},
            "issue_dependencies_summary": dict.fromkeys(
                ("blocked_by", "blocking", "total_blocked_by", "total_blocking"), 0
            ),
            "body": issue.body,
            "reactions": self._reactions(url),
            "timeline_url": f"{url}/timeline",
            "performed_via_github_app": None,
            "state_reason": issue.state_reason,
        }
        if issue.pull_request:
            data["draft"] = False
            data["pull_request"] = {
                "url": f"{api}/pulls/{issue.number}",
                "html_url": html,
                "diff_url": f"{html}.diff",
                "patch_url": f"{html}.patch",
                "merged_at": None,
            }
        if full:  # GitHub sends closed_by on the single-issue endpoints only
            data["closed_by"] = self._user_json(issue.closed_by) if issue.closed_by else None
        return data

    def _comment_json(self, repo: _Repo, comment: _Comment) -> dict[str, Any]:
        api = self._repo_api(repo)
        url = f"{api}/issues/comments/{comment.id}"
        web = f"{self.api_url}/{repo.owner}/{repo.name}/issues/{comment.issue_number}"
        return {
            "url": url,
            "html_url": f"{web}#issuecomment-{comment.id}",
            "issue_url": f"{api}/issues/{comment.issue_number}",
            "id": comment.id,
            "node_id": _node_id("IC", "IssueComment", comment.id),
            "user": self._user_json(comment.user),
            "created_at": comment.created_at,
            "updated_at": comment.updated_at,
            "author_association": self._association(repo, comment.user),
            "body": comment.body,
            "reactions": self._reactions(url),
            "performed_via_github_app": None,
        }

    def _paginate(self, call: _Call, items: list[Any]) -> _Reply:
        per_page = _int_param(call.query.get("per_page"), DEFAULT_PER_PAGE)
        per_page = DEFAULT_PER_PAGE if per_page < 1 else min(per_page, MAX_PER_PAGE)
        page = max(_int_param(call.query.get("page"), 1), 1)
        last = max(math.ceil(len(items) / per_page), 1)

        def link(number: int, rel: str) -> str:
            query = urlencode({**call.query, "page": str(number)})
            return f'<{self.api_url}{call.path}?{query}>; rel="{rel}"'

        links = [link(page - 1, "prev")] if page > 1 else []
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links.append(link(1, "first"))
        headers = [("Link", ", ".join(links))] if links else []
        return _Reply(200, items[(page - 1) * per_page : page * per_page], headers)

    # time, ids, persistence

    def _now(self) -> datetime:
        return self._clock().astimezone(UTC).replace(microsecond=0)

    def _stamp(self) -> str:
        return self._now().strftime(_TIME_FORMAT)

    def _later(self, previous: str) -> str:
        # GitHub's timestamps have one-second resolution; keeping them strictly increasing
        # per object makes "updated_at changed" a reliable signal for every edit.
        later = max(self._now(), _parse_time(previous) + timedelta(seconds=1))
        return later.strftime(_TIME_FORMAT)

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def _save(self) -> None:
        if self._state_file is None:
            return
        data = {
            "format": _STATE_FORMAT,
            "next_id": self._next_id,
            "repos": [r.to_json() for r in self._repos.values()],
        }
        folder = self._state_file.parent
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".sandbox-", suffix=".json", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
        os.replace(tmp, self._state_file)

    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("format") != _STATE_FORMAT:
                raise ValueError(f"format is {data.get('format')!r}, expected {_STATE_FORMAT!r}")
            repos = [_Repo.from_json(r) for r in data["repos"]]
            self._next_id = int(data["next_id"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}: not a sandbox state file ({exc})") from exc
        self._repos = {f"{r.owner}/{r.name}".casefold(): r for r in repos}


def _etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    bare = etag.removeprefix("W/")
    return any(t.strip() == "*" or t.strip().removeprefix("W/") == bare for t in header.split(","))


def _object(call: _Call) -> dict[str, Any]:
    if call.body is None:
        return {}
    if not isinstance(call.body, dict):
        raise _invalid_request(call.doc, "Body must be a JSON object.")
    return call.body


def _label_list(value: Any, doc: str) -> list[str]:
    """Label names from a list of names or of {"name": ...} objects, or {"labels": [...]}."""
    if isinstance(value, dict) and "labels" in value:
        value = value["labels"]
    if value is None:
        return []
    if not isinstance(value, list):
        raise _invalid_request(doc, 'For "labels", value is not an array.')
    names = [x.get("name") if isinstance(x, dict) else x for x in value]
    if not all(isinstance(x, str) for x in names):
        raise _invalid_request(doc, 'For "labels", items must be strings or {"name": ...}.')
    return [str(x) for x in names]


def _comment_body(body: Mapping[str, Any], doc: str) -> str:
    if "body" not in body:
        raise _invalid_request(doc, '"body" wasn\'t supplied.')
    text = body["body"]
    if not isinstance(text, str):
        raise _invalid_request(doc, 'For "body", value is not a string.')
    if not text.strip():
        raise _field_error(doc, "IssueComment", "body", "missing_field")
    if len(text) > MAX_BODY_CHARS:
        raise _too_long(doc, "IssueComment", "body", MAX_BODY_CHARS)
    return text


# --- running it in the foreground ---------------------------------------------------------


def serve(
    port: int = 0,
    state_file: str | Path | None = None,
    repos: Sequence[str] = (),
    *,
    out: TextIO | None = None,
) -> None:
    """Run a sandbox until interrupted, printing its URL; ``repos`` are created if missing."""
    stream = out or sys.stdout
    with GitHubSandbox(port=port, state_file=state_file) as sandbox:
        for full_name in repos:
            owner, _, name = full_name.partition("/")
            if not owner or not name:
                raise ValueError(f"repository must be OWNER/NAME, got {full_name!r}")
            sandbox.create_repo(owner, name)
        print(f"GitHub sandbox listening on {sandbox.api_url}", file=stream, flush=True)
        where = f"state in {state_file}" if state_file else "state in memory only"
        print(f"({where}; Ctrl-C to stop)", file=stream, flush=True)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a local imitation of the GitHub API.")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument("--state", help="JSON file that keeps state across restarts")
    parser.add_argument(
        "--repo", action="append", default=[], help="OWNER/NAME to create (repeatable)"
    )
    args = parser.parse_args(argv)
    serve(args.port, args.state, args.repo)
    return 0


if __name__ == "__main__":
    sys.exit(main())
