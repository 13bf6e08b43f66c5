"""The JSON shapes the sandbox answers with, as GitHub's REST API (2022-11-28) has them.

tests/sandbox/test_http.py checks these against GitHub's published schema.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from .state import _Comment, _Issue, _Label, _node_id, _Repo, _State


class _Shapes(_State):
    """Renders records as GitHub's JSON."""

    def _repo_api(self, repo: _Repo) -> str:
        return f"{self.api_url}/repos/{repo.owner}/{repo.name}"

    def _user_id(self, login: str) -> int:
        return zlib.crc32(login.casefold().encode()) & 0x7FFFFFFF or 1

    def _user_json(self, login: str, kind: str | None = None) -> dict[str, Any]:
        kind = kind or ("Bot" if login.endswith("[bot]") else "User")
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
            "locked": issue.locked,
            "assignee": assignees[0] if assignees else None,
            "assignees": assignees,
            "milestone": None,
            "comments": issue.comments,
            "created_at": issue.created_at,
            "updated_at": issue.updated_at,
            "closed_at": issue.closed_at,
            "author_association": self._association(repo, issue.user),
            "type": None,
            "active_lock_reason": issue.lock_reason,
            "issue_dependencies_summary": dict.fromkeys(
                ("blocked_by", "blocking", "total_blocked_by", "total_blocking"), 0
            ),
            "body": issue.body,
            "reactions": self._reactions(url),
            "timeline_url": f"{url}/timeline",
            "performed_via_github_app": None,
            "state_reason": issue.state_reason,
        }
        if self.sub_issues_enabled:
            data.update(self._sub_issue_fields(issue))
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

    def _sub_issues_of(self, issue: _Issue) -> list[tuple[_Repo, _Issue]]:
        """The sub-issues of ``issue`` in priority order (deleted ones are not listed)."""
        found = (self._issue_by_id(i) for i in issue.sub_issue_ids)
        return [(r, i) for r, i in (f for f in found if f is not None) if not i.deleted]

    def _sub_issue_fields(self, issue: _Issue) -> dict[str, Any]:
        children = [i for _, i in self._sub_issues_of(issue)]
        done = sum(1 for i in children if i.state == "closed")
        summary = {
            "total": len(children),
            "completed": done,
            "percent_completed": done * 100 // len(children) if children else 0,
        }
        data: dict[str, Any] = {"sub_issues_summary": summary}
        parent = self._issue_by_id(issue.parent_id) if issue.parent_id is not None else None
        if parent is not None:
            data["parent_issue_url"] = f"{self._repo_api(parent[0])}/issues/{parent[1].number}"
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
