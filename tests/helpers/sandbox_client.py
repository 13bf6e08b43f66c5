"""What the sandbox tests share: the repository they drive, a PyGithub client and raw requests
on the sandbox, the ``gh`` fixture's body, and the check of a payload against GitHub's published
REST schema (githubkit's models). Used by tests/sandbox/."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests
from github import Auth, Github, GithubRetry
from pydantic import BaseModel

from artbot.sandbox import GitHubSandbox

OWNER, NAME = "OpenPipe", "ART"
REPO = f"{OWNER}/{NAME}"
TOKEN = "ghp_sandboxTestTokenDoNotLeak0123456789"
API = f"/repos/{REPO}"


def client(sandbox: GitHubSandbox, token: str | None = TOKEN, retry: Any = None) -> Github:
    return Github(
        base_url=sandbox.api_url,
        auth=Auth.Token(token) if token else None,
        retry=retry,
        per_page=100,
        seconds_between_requests=0,
        seconds_between_writes=0,
    )


def raw(
    sandbox: GitHubSandbox,
    method: str,
    path: str,
    body: Any = None,
    token: str | None = TOKEN,
    headers: dict[str, str] | None = None,
) -> requests.Response:
    sent = dict(headers or {})
    if token:
        sent["Authorization"] = f"token {token}"
    return requests.request(method, sandbox.api_url + path, json=body, headers=sent, timeout=10)


def fast_retry() -> GithubRetry:
    return GithubRetry(total=3, backoff_factor=0, secondary_rate_wait=0)


def repo_client(sandbox: GitHubSandbox) -> Iterator[Github]:
    """The sandbox tests' ``gh`` fixture (``gh = pytest.fixture(repo_client, name="gh")``):
    OpenPipe/ART created, and a PyGithub client for it, closed afterwards."""
    sandbox.create_repo(OWNER, NAME)
    g = client(sandbox)
    yield g
    g.close()


def statuses(sandbox: GitHubSandbox, method: str, path: str) -> list[int]:
    return [r.status for r in sandbox.requests if r.method == method and r.path == path]


def schema_models() -> Any:
    try:
        from githubkit_schemas.v2022_11_28 import models
    except ImportError as exc:  # e.g. hishel 2.0 breaks githubkit 0.16's import
        pytest.skip(f"GitHub's REST schema models (githubkit-schemas) unavailable: {exc}")
    return models


def unknown_keys(model: type[BaseModel], payload: Any) -> list[str]:
    """Validate ``payload`` against ``model``; return the keys the schema does not know.

    githubkit's models ignore unknown keys, so compare the payload with what the validated
    model keeps: any key that did not survive is one the published schema lacks.
    """
    kept = model.model_validate(payload).model_dump(mode="json", by_alias=True, exclude_unset=True)

    def walk(sent: Any, known: Any, path: str) -> Iterator[str]:
        if isinstance(sent, dict) and isinstance(known, dict):
            for key, value in sent.items():
                if key not in known:
                    yield f"{path}.{key}"
                else:
                    yield from walk(value, known[key], f"{path}.{key}")
        elif isinstance(sent, list) and isinstance(known, list):
            for i, (a, b) in enumerate(zip(sent, known, strict=True)):
                yield from walk(a, b, f"{path}[{i}]")

    return list(walk(payload, kept, "$"))
