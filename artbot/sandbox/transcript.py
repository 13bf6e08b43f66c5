"""What the sandbox answered, for a client to check: every response, with the endpoint that
served it and the request headers that choose its shape (the API version and media type).

:attr:`GitHubSandbox.observers <artbot.sandbox.GitHubSandbox.observers>` are called with every
response any sandbox in the process sends; ``GitHubSandbox(transcript=FILE)`` (``artbot sandbox``
with ``$ARTBOT_SANDBOX_TRANSCRIPT`` set) also appends each to FILE as a JSON line. The test suite
checks all of them against GitHub's published schema (tests/helpers/github_schema.py). The token is
never recorded: of the request's headers only :data:`RECORDED_HEADERS` are kept.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .routes import _Outcome

# Request headers that decide what GitHub answers (and who asked); never Authorization.
RECORDED_HEADERS = ("Accept", "X-GitHub-Api-Version", "User-Agent")


@dataclass(frozen=True)
class SentResponse:
    """One response as the sandbox sent it. ``route`` is the endpoint's path as GitHub's REST
    docs write it (``/repos/{owner}/{repo}/issues/{number}``); None when no endpoint matched
    (a 404). ``fault`` is true when an injected fault was served instead of the answer."""

    method: str
    path: str
    route: str | None
    status: int  # 0: the connection was dropped
    body: str
    fault: bool = False
    request_headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        method: str,
        path: str,
        route: str | None,
        out: _Outcome,
        headers: Iterable[tuple[str, str]],
    ) -> SentResponse:
        given = {name.lower(): value for name, value in headers}
        kept = {name: given[name.lower()] for name in RECORDED_HEADERS if name.lower() in given}
        text = out.body.decode("utf-8", errors="replace")
        return cls(method, path, route, out.status, text, out.fault, kept)


class TranscriptFile:
    """An observer that appends each response to ``path`` as one JSON line, flushed at once
    (a sandbox process may be stopped at any time)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def __call__(self, sent: SentResponse) -> None:
        line = json.dumps(asdict(sent)) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line)


def read_transcript(path: Path, offset: int = 0) -> tuple[list[SentResponse], int]:
    """The responses in a transcript file from byte ``offset`` on, and the offset after the
    last whole line (a line still being written is left for the next read)."""
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except FileNotFoundError:
        return [], offset
    whole = data[: data.rfind(b"\n") + 1]
    return list(_parse(whole)), offset + len(whole)


def _parse(data: bytes) -> Iterator[SentResponse]:
    for line in data.decode("utf-8").splitlines():
        if line.strip():
            yield SentResponse(**json.loads(line))
