"""The GitHub adapter: the only module that talks to GitHub (through PyGithub).

Design notes:
- Our issues are found by their hidden marker in the label-filtered issues list, never by
  search: the search index lags writes by seconds to minutes, so a search after a create can
  miss the issue we just made and we would file it twice.
- Reads are conditional (``If-None-Match`` with a saved ETag): an unchanged resource costs a
  304, which GitHub does not count against the rate limit.
- Every request goes through :meth:`GitHubRepo._request`, which follows a redirect (301, 302,
  307, 308: GitHub asks clients to repeat the request verbatim at ``Location``) only within
  the API root it was given, at most three times; any other redirect is a one-line error.
- Every failure leaves as :class:`RemoteError` with a one-line reason. Messages are built
  from status codes and GitHub's ``message`` only; the token never enters them.
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from github import Auth, Github

from .. import __version__
from ..errors import BadInput, RemoteError, SubIssueRefused, SubIssuesUnavailable
from ..inputs import check_api_url, check_token, missing_repository, repository_to_use
from ..jsonlimits import loads_limited
from ..records.observed import ObservedIssue
from ..settings import (
    DEFAULT_GITHUB_TIMEOUT,
    DEFAULT_SECONDARY_RATE_WAIT,
    TOKEN_VARIABLES,
    Settings,
)
from .etagcache import EtagCache
from .failures import remote as _remote
from .retry import Retry

DEFAULT_API_URL = "https://api.github.com"
REDIRECTS = (301, 302, 303, 307, 308)
MAX_REDIRECTS = 3
MAX_ANSWER_BYTES = 64 * 1024 * 1024  # a page of 100 issues with 65k-character bodies fits
# With every request: the API version artbot is written for, and GitHub's JSON media type.
API_HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
# A pull request asked for as ``git diff`` prints it.
DIFF_MEDIA_TYPE = "application/vnd.github.diff"


# PyGithub logs its own view of a failed request ("Request GET /user failed with 403") through
# a handler of its own on stderr; artbot reports every failure once, as a RemoteError, so
# PyGithub's records go nowhere (its handler is replaced, nothing propagates).
logging.getLogger("github").handlers = [logging.NullHandler()]
logging.getLogger("github").propagate = False


def _is_loopback(api_url: str) -> bool:
    host = urllib.parse.urlparse(api_url).hostname or ""
    return host in ("127.0.0.1", "localhost", "::1")


class GitHubRepo:
    """One repository on GitHub (or the sandbox), with the few operations artbot needs: the
    run is written against this class and no other (docs/design.md, "the adapter")."""

    def __init__(
        self,
        repo: str,
        *,
        api_url: str | None = None,
        token: str | None = None,
        cache: EtagCache | None = None,
        timeout: int = DEFAULT_GITHUB_TIMEOUT,
        retries: int = 4,
        secondary_rate_wait: float = DEFAULT_SECONDARY_RATE_WAIT,
        say: Callable[[str], None] | None = None,
        api_url_source: str = "--api-url",
    ):
        self.full_name = repo
        # Where api_url came from, for an error about it: --api-url, $GITHUB_API_URL, default.
        self.api_url_source = api_url_source if api_url else "the default API URL"
        self.timeout = timeout
        self.api_url = (api_url or DEFAULT_API_URL).rstrip("/")
        self.cache = cache or EtagCache()
        local = _is_loopback(self.api_url)
        self._gh = Github(
            base_url=self.api_url,
            auth=Auth.Token(token) if token else None,
            user_agent=f"artbot/{__version__}",
            timeout=timeout,
            retry=Retry(
                say=say,
                timeout=timeout,
                total=retries,
                backoff_factor=0.0 if local else 1.0,
                secondary_rate_wait=secondary_rate_wait,
                # A connection that was never made is safe to retry for any method; one
                # dropped after a POST went out is not retried (see artbot.github.retry).
                connect=retries,
                # A read time-out costs the whole timeout each time: asked three times at most.
                read=min(retries, 2),
            ),
            per_page=100,
            lazy=True,
            # PyGithub's pacing is right for github.com; the loopback sandbox needs none.
            seconds_between_requests=0 if local else 0.25,
            seconds_between_writes=0 if local else 1.0,
        )
        self._url = f"/repos/{repo}"

    # -- reads ---------------------------------------------------------------------------

    def _get(
        self, url: str, params: dict[str, Any] | None = None, *, fresh: bool = False
    ) -> tuple[Any, dict[str, Any]]:
        """A conditional GET; returns (json, headers). A 304 returns the cached JSON; ``fresh``
        asks unconditionally (what is about to be written is decided by GitHub's answer)."""
        # Keyed by API root too: a cache written against the sandbox (or another GitHub
        # Enterprise host) is never trusted against github.com.
        query = "?" + urllib.parse.urlencode(sorted(params.items())) if params else ""
        key = f"{self.api_url} {url}{query}"
        saved = self.cache.entries.get(key)
        headers = {"If-None-Match": saved["etag"]} if saved and not fresh else {}
        data, resp_headers = self._request("GET", url, params=params, headers=headers)
        if data is None and saved is not None:  # 304 Not Modified
            return saved["data"], resp_headers
        etag = resp_headers.get("etag")
        if etag:
            self.cache.entries[key] = {"etag": etag, "data": data}
        return data, resp_headers

    def _request(
        self,
        verb: str,
        url: str,
        *,
        params: dict[str, Any] | None = None,
        input: Any = None,
        headers: dict[str, str] | None = None,
        raw: bool = False,
    ) -> tuple[Any, dict[str, Any]]:
        """One REST call: (json or None, headers); redirects followed within the API root.
        ``raw``: a success's body as text (a media type that is not JSON)."""
        what = f"{verb} {url}"
        headers = {**API_HEADERS, **(headers or {})}
        for _ in range(MAX_REDIRECTS + 1):
            with _remote(what, timeout=self.timeout):
                status, resp_headers, output = self._gh.requester.requestJson(
                    verb, url, parameters=params, headers=headers, input=input
                )
            if status not in REDIRECTS:
                break
            url, params = self._redirect(what, status, resp_headers.get("location"))
            verb = "GET" if status == 303 else verb
        else:
            raise RemoteError(f"{what}: more than {MAX_REDIRECTS} redirects, not followed")
        if raw and status < 400:
            return output or "", resp_headers
        try:
            data = loads_limited(output, max_bytes=MAX_ANSWER_BYTES) if output else None
        except ValueError:  # JsonTooLarge included: nested too deep, or too large
            raise RemoteError(f"{what}: GitHub answered {status}, not JSON artbot reads") from None
        if status >= 400:
            with _remote(what):
                raise self._gh.requester.createException(
                    status, resp_headers, data if isinstance(data, dict) else {}
                )
        return data, resp_headers

    def _redirect(
        self, what: str, status: int, location: str | None
    ) -> tuple[str, dict[str, Any] | None]:
        """Where a redirect may be followed: under the same API root, else a RemoteError
        (the token is never sent to another host)."""
        target = urllib.parse.urlsplit(urllib.parse.urljoin(self.api_url + "/", location or ""))
        root = urllib.parse.urlsplit(self.api_url)
        base = root.path.rstrip("/")
        inside = target.path == base or target.path.startswith(base + "/")
        same = (target.scheme, target.netloc) == (root.scheme, root.netloc)
        if not location or not same or not inside:
            shown = f"{target.scheme}://{target.hostname}" if location else "nowhere"
            raise RemoteError(f"{what}: GitHub redirected ({status}) to {shown}; not followed")
        query = dict(urllib.parse.parse_qsl(target.query)) or None
        return relative_path(self.api_url, target.path), query

    def list_issues(self, labels: list[str]) -> list[ObservedIssue]:
        """Every issue (open and closed) carrying all ``labels``; pull requests skipped."""
        url = f"{self._url}/issues"
        params: dict[str, Any] | None = {
            "state": "all",
            "labels": ",".join(labels),
            "sort": "created",
            "direction": "asc",
            "per_page": 100,
        }
        try:  # a run's first request: a 404 is the repository's, not the list's
            listed = list(self._pages(url, params))
        except RemoteError as exc:
            if exc.status != 404:
                raise
            raise missing_repository(
                self.full_name, self.api_url, self.api_url_source, api_found=self._api_answers()
            ) from None
        return [ObservedIssue.from_json(d) for d in listed if "pull_request" not in d]

    def list_open_issues(self) -> Iterator[ObservedIssue]:
        """The repository's open issues, page by page as they are read (pull requests
        skipped): where the tracking issue is looked for when none is configured."""
        params = {"state": "open", "sort": "created", "direction": "asc", "per_page": 100}
        for data in self._pages(f"{self._url}/issues", params):
            if "pull_request" not in data:
                yield ObservedIssue.from_json(data)

    def _api_answers(self) -> bool:
        """Whether a GitHub API answers at ``api_url`` at all (its ``/rate_limit``, which every
        GitHub serves and no rate limit counts), asked only after a 404 for the repository, so
        that a wrong API path is not blamed on the repository's name."""
        try:
            self._request("GET", "/rate_limit")
        except RemoteError:
            return False
        return True

    def _pages(self, url: str, params: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
        """Every item of a paginated list: conditional GETs, following ``rel="next"``."""
        while True:
            data, headers = self._get(url, params)
            yield from data
            next_url = _next_link(headers.get("link"))
            if not next_url:
                return
            parsed = urllib.parse.urlparse(next_url)
            url = relative_path(self.api_url, parsed.path)
            params = dict(urllib.parse.parse_qsl(parsed.query))

    def read_upstream(
        self, repository: str, endpoint: str, params: dict[str, Any] | None = None
    ) -> Any:
        """``GET /repos/{repository}/{endpoint}`` of another repository (ART's compare and
        commits endpoints, for :mod:`artbot.github.changes`); None where GitHub answers 404."""
        try:
            data, _ = self._get(f"/repos/{repository}/{endpoint}", params)
        except RemoteError as exc:
            if exc.status == 404:
                return None
            raise
        return data

    def get_issue(self, number: int, *, fresh: bool = False) -> ObservedIssue:
        data, _ = self._get(f"{self._url}/issues/{number}", fresh=fresh)
        if "pull_request" in data:
            raise BadInput(f"#{number} is a pull request, not an issue")
        return ObservedIssue.from_json(data)

    def permission(self, login: str) -> str:
        """``login``'s permission (admin, write, read or none), asked unconditionally: it
        decides whether a tick on the tracking issue is carried out. Not a collaborator, or
        not a user (404): none."""
        path = f"{self._url}/collaborators/{urllib.parse.quote(login, safe='')}/permission"
        try:
            data, _ = self._get(path, fresh=True)
        except RemoteError as exc:
            if exc.status == 404:
                return "none"
            raise
        value = data.get("permission") if isinstance(data, dict) else None
        return value if value in ("admin", "write", "read", "none") else "none"

    # -- writes --------------------------------------------------------------------------

    def create_label(
        self, name: str, color: str | None = None, description: str | None = None
    ) -> None:
        label = {
            "name": name,
            "color": color or "c5def5",
            "description": description or "filed by artbot (numerics audit)",
        }
        try:
            self._request("POST", f"{self._url}/labels", input=label)
        except RemoteError as exc:
            if exc.status != 422:  # 422 already_exists: someone made it meanwhile
                raise

    def create_issue(self, title: str, body: str, labels: list[str]) -> ObservedIssue:
        fields = {"title": title, "body": body, "labels": labels}
        data, _ = self._request("POST", f"{self._url}/issues", input=fields)
        return ObservedIssue.from_json(data)

    def edit_issue(self, number: int, **fields: Any) -> ObservedIssue:
        # The PATCH reply is the edited issue.
        data, _ = self._request("PATCH", f"{self._url}/issues/{number}", input=fields)
        return ObservedIssue.from_json(data)

    def add_labels(self, number: int, labels: list[str]) -> None:
        self._request("POST", f"{self._url}/issues/{number}/labels", input={"labels": labels})

    def list_comments(self, number: int) -> list[dict[str, Any]]:
        """Every comment on #number, oldest first, from every page (reading only the first
        100, artbot posted its status comments again on a busy issue)."""
        url = f"{self._url}/issues/{number}/comments"
        return [c for c in self._pages(url, {"per_page": 100}) if isinstance(c, dict)]

    def post_comment(self, number: int, body: str) -> str | None:
        """Comment on #number; the new comment's ``html_url`` (None where GitHub omits it)."""
        data, _ = self._request(
            "POST", f"{self._url}/issues/{number}/comments", input={"body": body}
        )
        url = data.get("html_url") if isinstance(data, dict) else None
        return url if isinstance(url, str) else None

    # -- pull requests of another repository (ART's, for `/artbot test #N`) ----------------

    def pull_files(self, repository: str, number: int) -> list[dict[str, Any]]:
        """The files pull request #number of ``repository`` changes (``DiffEntry`` each)."""
        url = f"/repos/{repository}/pulls/{number}/files"
        return [f for f in self._pages(url, {"per_page": 100}) if isinstance(f, dict)]

    def pull_diff(self, repository: str, number: int, max_bytes: int) -> str:
        """Pull request #number of ``repository`` as its unified diff (GitHub's
        ``application/vnd.github.diff`` media type); a diff over ``max_bytes`` is a
        :class:`BadInput` (it is not kept)."""
        url, headers = f"/repos/{repository}/pulls/{number}", {"Accept": DIFF_MEDIA_TYPE}
        text, _ = self._request("GET", url, headers=headers, raw=True)
        if len(text.encode("utf-8")) > max_bytes:
            raise BadInput(f"pull request #{number}'s diff is over the cap of {max_bytes:,} bytes")
        return text

    # -- sub-issues (the tracking issue's native progress) ----------------------------------

    def list_sub_issues(self, number: int) -> list[ObservedIssue]:
        """#number's sub-issues in GitHub's order: one conditional request per 100."""
        url = f"{self._url}/issues/{number}/sub_issues"
        params: dict[str, Any] = {"per_page": 100}
        with _sub_issues():
            return [ObservedIssue.from_json(d) for d in self._pages(url, params)]

    def add_sub_issue(
        self, number: int, sub_issue_id: int, *, replace_parent: bool
    ) -> ObservedIssue | None:
        """Make the issue ``sub_issue_id`` a sub-issue of #number; GitHub answers with #number
        as it is then (None when the answer is not #number: the caller then reads it)."""
        # By id, not number (GitHub's rule); replace_parent only when asked for.
        body: dict[str, Any] = {"sub_issue_id": sub_issue_id}
        if replace_parent:
            body["replace_parent"] = True
        with _sub_issues():
            data, _ = self._request("POST", f"{self._url}/issues/{number}/sub_issues", input=body)
        if not isinstance(data, dict) or data.get("number") != number:
            return None
        return ObservedIssue.from_json(data)

    def remove_sub_issue(self, number: int, sub_issue_id: int) -> None:
        body = {"sub_issue_id": sub_issue_id}
        with _sub_issues():
            self._request("DELETE", f"{self._url}/issues/{number}/sub_issue", input=body)

    def reprioritize_sub_issue(
        self, number: int, sub_issue_id: int, *, after_id: int | None, before_id: int | None
    ) -> None:
        body: dict[str, Any] = {"sub_issue_id": sub_issue_id}
        body.update({"after_id": after_id} if after_id is not None else {"before_id": before_id})
        with _sub_issues():
            self._request("PATCH", f"{self._url}/issues/{number}/sub_issues/priority", input=body)

    def parent_of(self, number: int) -> tuple[str, int] | None:
        """#number's parent issue as (repository full name, number); None without one."""
        try:
            data, _ = self._request("GET", f"{self._url}/issues/{number}/parent")
        except RemoteError as exc:
            if exc.status == 404:
                return None
            raise
        owner, name = str(data.get("repository_url") or "").rstrip("/").split("/")[-2:]
        return f"{owner}/{name}", int(data["number"])


@contextmanager
def _sub_issues() -> Iterator[None]:
    """A 404 from a sub-issue endpoint means this GitHub has none (an Enterprise Server
    without them); a 422 is a refusal (another parent, the cap of 100, ...)."""
    try:
        yield
    except RemoteError as exc:
        if exc.status == 404:
            raise SubIssuesUnavailable(str(exc), 404) from None
        if exc.status == 422:
            raise SubIssueRefused(str(exc), 422) from None
        raise


def relative_path(api_url: str, path: str) -> str:
    """``path`` (from a ``Link`` URL) relative to the API root, which PyGithub prepends again
    (on GitHub Enterprise, page 2 would otherwise be ``/api/v3/api/v3/repos/...``)."""
    base = urllib.parse.urlparse(api_url).path.rstrip("/")
    if base and (path == base or path.startswith(base + "/")):
        return path[len(base) :] or "/"
    return path


def _next_link(link: str | None) -> str | None:
    """The ``rel="next"`` URL of an RFC 5988 Link header."""
    for part in (link or "").split(","):
        url, _, rel = part.partition(";")
        if 'rel="next"' in rel:
            return url.strip().strip("<>")
    return None


def connect(
    settings: Settings,
    default_repository: str,
    *,
    repo_name: str | None = None,
    api_url: str | None = None,
    cache_path: Path,
    dry_run: bool = False,
) -> GitHubRepo:
    """The adapter for one run: flags first, then the environment (``settings``), then defaults.
    Without a token only a dry run may proceed (reads are anonymous)."""
    if not settings.token and not dry_run:
        names = " or ".join(TOKEN_VARIABLES)
        raise BadInput(f"no token: set {names}, or sign in to the gh CLI (or use --dry-run)")
    source = "--api-url" if api_url else "$GITHUB_API_URL"
    check_api_url(api_url or settings.api_url, source)
    check_token(settings.token, settings.token_variable)
    name = repository_to_use(repo_name, settings.repository, default_repository)
    return GitHubRepo(
        name,
        api_url_source=source,
        api_url=api_url or settings.api_url,
        token=settings.token,
        cache=EtagCache.load(cache_path),
        secondary_rate_wait=settings.secondary_rate_wait,
        timeout=settings.github_timeout,
    )
