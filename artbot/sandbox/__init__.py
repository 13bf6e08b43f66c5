"""A loopback imitation of the GitHub REST API (version 2022-11-28).

:class:`GitHubSandbox` serves the slice of the API that artbot uses (repositories, issues,
comments, labels, sub-issues, collaborator permissions, rate limits) over real HTTP on
127.0.0.1, so PyGithub runs unmodified against it: ``Github(base_url=sandbox.api_url,
auth=Auth.Token("any"))``. It imitates GitHub's JSON shapes, pagination ``Link`` headers, ETags
and 304s, rate-limit headers and error bodies. The test suite extends it with injected
faults (tests/helpers/testsandbox.py).

Every request is recorded in :attr:`GitHubSandbox.requests` as method, path, query and status;
every response goes to :attr:`GitHubSandbox.observers` (and, with ``transcript``, to a file)
with the endpoint that served it, so a test can check it against GitHub's published schema.
Tokens are never stored, logged or echoed: a token only selects a rate-limit bucket, through
its hash. State lives in memory and, with ``state_file``, in a JSON file rewritten after every
write, so ``artbot sandbox --state FILE`` keeps its issues across restarts.

Its modules are listed in docs/design.md.
"""

from __future__ import annotations

from .server import GitHubSandbox, serve
from .state import (
    API_VERSION,
    MAX_BODY_CHARS,
    MAX_TITLE_CHARS,
    RecordedRequest,
    RequestLog,
)
from .transcript import SentResponse, read_transcript

__all__ = [
    "API_VERSION",
    "MAX_BODY_CHARS",
    "MAX_TITLE_CHARS",
    "GitHubSandbox",
    "RecordedRequest",
    "RequestLog",
    "SentResponse",
    "read_transcript",
    "serve",
]
