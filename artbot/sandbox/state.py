"""The sandbox's state: records, request log, API errors, and persistence."""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import socketserver
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

API_VERSION = "2022-11-28"
MAX_BODY_CHARS = 65536
MAX_TITLE_CHARS = 256
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100
ANONYMOUS_RATE_LIMIT = 60
DOCS = "https://docs.github.com/rest"
RATE_DOCS = f"{DOCS}/overview/rate-limits-for-the-rest-api"
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
    parent_id: int | None = None  # the issue (by id) this one is a sub-issue of
    sub_issue_ids: list[int] = field(default_factory=list)  # in priority order
    lock_reason: str | None = None  # set while locked (PUT .../lock); None is unlocked
    locked: bool = False


_RECORD_MAPS = ("labels", "issues", "comments")  # _Repo's maps, kept in the file as lists


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
        """The state file's form: the fields, each map of records as a list of them."""
        data = dataclasses.asdict(self)
        return {k: list(v.values()) if k in _RECORD_MAPS else v for k, v in data.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> _Repo:
        labels = [_Label(**x) for x in data["labels"]]
        issues = [_Issue(**x) for x in data["issues"]]
        comments = [_Comment(**x) for x in data["comments"]]
        scalars = [f.name for f in dataclasses.fields(cls) if f.name not in _RECORD_MAPS]
        return cls(
            **{name: data[name] for name in scalars},
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


class _State:
    """The sandbox's data and its clock, ids and persistence (the JSON state file)."""

    login: str
    rate_limit: int
    sub_issues_enabled: bool
    _clock: Callable[[], datetime]
    _state_file: Path | None
    _lock: threading.RLock
    _repos: dict[str, _Repo]
    _next_id: int
    _server: socketserver.TCPServer

    # address

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def api_url(self) -> str:
        """The API root, PyGithub's ``base_url``; web (html_url) links use the same host."""
        return f"http://127.0.0.1:{self.port}"

    def _issue_by_id(self, issue_id: int) -> tuple[_Repo, _Issue] | None:
        """An issue in any repository, by id (sub-issues may live in another repository)."""
        for repo in self._repos.values():
            for issue in repo.issues.values():
                if issue.id == issue_id:
                    return repo, issue
        return None

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
