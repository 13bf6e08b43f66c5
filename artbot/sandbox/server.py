"""The sandbox's HTTP server, lifecycle, seeding helpers and rate limits."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, Self, TextIO
from urllib.parse import parse_qs, unquote, urlsplit

from .collaborators import _CollaboratorRoutes
from .routes import _Call, _Outcome, _Reply
from .state import (
    ANONYMOUS_RATE_LIMIT,
    API_VERSION,
    DOCS,
    RATE_DOCS,
    ApiError,
    RecordedRequest,
    RequestLog,
    _Bucket,
    _error,
    _int_param,
    _Repo,
)
from .subissues import _SubIssueRoutes
from .transcript import SentResponse, TranscriptFile


class _Request(NamedTuple):
    method: str
    path: str
    query: dict[str, str]
    raw_body: bytes
    headers: Message


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


class GitHubSandbox(_CollaboratorRoutes, _SubIssueRoutes):
    """A local GitHub REST API on 127.0.0.1; use as a context manager or start()/stop().

    The socket is bound at construction, so :attr:`api_url` is known before :meth:`start`.
    Any token is accepted unless ``tokens`` lists the valid ones; ``login`` is the user every
    token authenticates as (the scheduled Action's by default). ``clock`` (an aware datetime)
    makes timestamps deterministic; ``sub_issues=False`` imitates a GitHub Enterprise Server
    without sub-issues; every response goes to :attr:`observers` and to ``transcript``.
    """

    _server: _Server
    # Called with every response any sandbox in this process sends (the tests' schema check).
    observers: ClassVar[list[Callable[[SentResponse], None]]] = []

    def __init__(
        self,
        port: int = 0,
        state_file: str | Path | None = None,
        *,
        login: str = "github-actions[bot]",
        tokens: Collection[str] | None = None,
        rate_limit: int = 5000,
        clock: Callable[[], datetime] | None = None,
        sub_issues: bool = True,
        transcript: Path | None = None,
    ) -> None:
        self._lock = threading.RLock()
        self._transcript = TranscriptFile(transcript) if transcript is not None else None
        self._state_file = Path(state_file) if state_file is not None else None
        # What the sandbox was made with: reset() goes back to it.
        self._made_with = (login, tokens, rate_limit, clock, sub_issues)
        self._init_state(*self._made_with)
        if self._state_file is not None and self._state_file.exists():
            self._load(self._state_file)
        self._server = _Server(("127.0.0.1", port), self)
        self._thread: threading.Thread | None = None
        self._routes = self._build_routes()

    def _init_state(
        self,
        login: str,
        tokens: Collection[str] | None,
        rate_limit: int,
        clock: Callable[[], datetime] | None,
        sub_issues: bool,
    ) -> None:
        """Everything a test can change: repositories, roles, counters, the request log.

        State of the sandbox lives here and nowhere else, so :meth:`reset` empties all of it.
        """
        self.login = login
        self.sub_issues_enabled = sub_issues
        self.rate_limit = rate_limit
        self.requests = RequestLog()
        self._tokens = list(tokens) if tokens is not None else None
        self._clock = clock or (lambda: datetime.now(UTC))
        self._repos: dict[str, _Repo] = {}
        self._next_id = 1
        self._roles: dict[tuple[str, str], str] = {}  # collaborators.py
        self._buckets: dict[str, _Bucket] = {}
        self._request_count = 0

    def reset(self) -> None:
        """Back to a new, empty sandbox on the same port, configured as it was made, its open
        connections closed (no keep-alive socket carries a test's requests into the next).
        A sandbox with a state file is not reset (its state is the file's)."""
        if self._state_file is not None:
            raise RuntimeError("a sandbox with a state file cannot be reset")
        with self._lock:
            self._init_state(*self._made_with)
        self._server.close_connections()

    # lifecycle

    def start(self) -> Self:
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

    def __enter__(self) -> Self:
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
        """Add an issue (or, with ``pull_request``, a pull request) and return its number;
        ``number`` skips ahead to that number, never to one already given out or below."""
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
            out = self._serve(_Request(method, path, query, raw_body, headers), request_id, bucket)
        self.requests.append(RecordedRequest(method, path, query, out.status))
        if GitHubSandbox.observers or self._transcript is not None:
            route = next((r.template for r in self._routes if r.matches(method, path)), None)
            sent = SentResponse.of(method, path, route, out, headers.items())
            for watch in (*GitHubSandbox.observers, self._transcript):
                if watch is not None:
                    watch(sent)
        return out

    def _serve(self, request: _Request, request_id: str, bucket: _Bucket) -> _Outcome:
        method, path, _, _, headers = request
        counted = path.rstrip("/") != "/rate_limit"  # as on GitHub, asking costs nothing
        try:
            if counted and bucket.remaining == 0:
                counted = False  # a refusal does not push "used" past the limit
                who = "127.0.0.1" if bucket.anonymous else f"user ID {self._user_id(self.login)}"
                raise _error(403, f"API rate limit exceeded for {who}.", RATE_DOCS)
            reply = self._dispatch(request, bucket)
        except ApiError as exc:
            reply = _Reply(exc.status, exc.payload)
        except Exception:  # a sandbox bug: answer like GitHub would, and show the traceback
            traceback.print_exc()
            reply = _Reply(500, {"message": "Server Error"})
        body, content_type = self._encode(reply.payload)
        out_headers = [
            ("Content-Type", content_type),
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

    def _encode(self, payload: Any) -> tuple[bytes, str]:
        """A reply's body and its Content-Type: every endpoint here answers JSON."""
        body = b"" if payload is None else json.dumps(payload).encode()
        return body, "application/json; charset=utf-8"

    def _dispatch(self, request: _Request, bucket: _Bucket) -> _Reply:
        method, path, query, raw_body, headers = request
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
            accept = headers.get("Accept", "")
            call = _Call(method, path, params, query, body, login, route.doc, bucket, accept)
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


def _etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    bare = etag.removeprefix("W/")
    return any(t.strip() == "*" or t.strip().removeprefix("W/") == bare for t in header.split(","))


# --- running it in the foreground ---------------------------------------------------------


def serve(
    port: int = 0,
    state_file: str | Path | None = None,
    repos: Sequence[str] = (),
    *,
    out: TextIO | None = None,
    ready: Callable[[GitHubSandbox], None] | None = None,
    transcript: Path | None = None,
) -> None:
    """Run a sandbox until interrupted, printing its URL; ``repos`` are created if missing,
    then ``ready`` is called with the running sandbox (``artbot sandbox --seed`` seeds it).
    ``transcript``: append every response to this file (:mod:`.transcript`)."""
    stream = out or sys.stdout
    with GitHubSandbox(port=port, state_file=state_file, transcript=transcript) as sandbox:
        for full_name in repos:
            owner, _, name = full_name.partition("/")
            if not owner or not name:
                raise ValueError(f"repository must be OWNER/NAME, got {full_name!r}")
            sandbox.create_repo(owner, name)
        print(f"GitHub sandbox listening on {sandbox.api_url}", file=stream, flush=True)
        where = f"state in {state_file}" if state_file else "state in memory only"
        print(f"({where}; Ctrl-C to stop)", file=stream, flush=True)
        if ready is not None:
            ready(sandbox)
            stream.flush()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
