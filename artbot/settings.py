"""Settings: what a run takes from its flags and the environment, read in one place.

:meth:`Settings.from_env` is the only reader of artbot's environment variables; every other
module gets a :class:`Settings` (or one of its values) passed in.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

# Where the token comes from, in order: GH_TOKEN wins over GITHUB_TOKEN, as with the gh CLI;
# without either, the gh CLI's own (`gh auth token`) for github.com (Settings.with_gh_token).
TOKEN_VARIABLES = ("GH_TOKEN", "GITHUB_TOKEN")
GITHUB_API = "https://api.github.com"
# Names of variables whose values are redacted from output wherever they appear.
SECRET_NAME_WORDS = ("TOKEN", "SECRET", "PASSWORD")
# GitHub asks clients to wait at least a minute after a secondary rate limit without Retry-After.
DEFAULT_SECONDARY_RATE_WAIT = 60.0
RATE_WAIT_VARIABLE = "ARTBOT_SECONDARY_RATE_WAIT"
# How long artbot waits for GitHub to connect, and then to answer, before a time-out (each try).
DEFAULT_GITHUB_TIMEOUT = 15
TIMEOUT_VARIABLE = "ARTBOT_GITHUB_TIMEOUT"
# Where openpipe-art release wheels are kept (artbot.verify.release).
CACHE_VARIABLE = "ARTBOT_CACHE_DIR"
# The user's cache directory, as the XDG base directory specification names it.
XDG_CACHE_VARIABLE = "XDG_CACHE_HOME"
# `artbot sandbox` appends every response it sends here (the tests check them against GitHub's
# published schema: artbot.sandbox.transcript).
TRANSCRIPT_VARIABLE = "ARTBOT_SANDBOX_TRANSCRIPT"
# What `artbot action` reads of a runner's environment besides the action's INPUT_* variables.
RUNNER_VARIABLES = (
    "GITHUB_WORKSPACE",
    "GITHUB_ACTION_PATH",
    "GITHUB_ACTION_REPOSITORY",
    "GITHUB_EVENT_NAME",
    "GITHUB_EVENT_PATH",
    "GITHUB_OUTPUT",
    "GITHUB_STEP_SUMMARY",
    "RUNNER_TEMP",
    "RUNS_AS_ACTIONS_BOT",
    "ARTBOT_AUTHORS",
)


@dataclass(frozen=True)
class Settings:
    """One run's settings. ``repr`` never shows the token."""

    root: Path = Path(".")
    debug: bool = False
    token: str | None = None
    secrets: tuple[str, ...] = ()  # every token value set, to redact from output
    repository: str | None = None  # $GITHUB_REPOSITORY
    api_url: str | None = None  # $GITHUB_API_URL
    in_actions: bool = False  # $GITHUB_ACTIONS == "true": print workflow annotations
    secondary_rate_wait: float = DEFAULT_SECONDARY_RATE_WAIT  # $ARTBOT_SECONDARY_RATE_WAIT
    github_timeout: int = DEFAULT_GITHUB_TIMEOUT  # $ARTBOT_GITHUB_TIMEOUT
    # Where artbot's own files are hosted (repro links): --tool-repository, else see toolsource.
    tool_repository: str | None = None
    workspace: Path | None = None  # $GITHUB_WORKSPACE: the checkout of $GITHUB_REPOSITORY
    # $ARTBOT_CACHE_DIR, else ~/.cache/artbot/wheels: where release wheels are kept.
    wheel_cache: Path = field(default_factory=lambda: default_wheel_cache())
    sandbox_transcript: Path | None = None  # $ARTBOT_SANDBOX_TRANSCRIPT
    search_path: str | None = None  # $PATH, where `gh` is looked for
    token_source: str | None = None  # where the token came from, when not the environment
    token_variable: str | None = None  # which of TOKEN_VARIABLES held it, for an error about it
    # The composite action's inputs (INPUT_*, none holding a credential) and RUNNER_VARIABLES.
    runner: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    # The environment a subprocess running repro or downloaded code gets: no token in it.
    child_env: Mapping[str, str] = field(
        default_factory=lambda: without_tokens(os.environ), compare=False, hash=False
    )

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        root: Path = Path("."),
        debug: bool = False,
        tool_repository: str | None = None,
    ) -> Settings:
        env = os.environ if env is None else env
        tokens = tuple(v for k in TOKEN_VARIABLES if (v := env.get(k)))
        # Other credentials a runner holds (ACTIONS_RUNTIME_TOKEN, ACTIONS_ID_TOKEN_REQUEST_
        # TOKEN, INPUT_GITHUB-TOKEN, ...) are redacted from output too.
        others = tuple(
            v
            for k, v in sorted(env.items())
            if k not in TOKEN_VARIABLES and any(w in k.upper() for w in SECRET_NAME_WORDS) and v
        )
        secrets = (*tokens, *others)
        return cls(
            root=root,
            debug=debug,
            # A token pasted with a trailing newline is the token; the raw value stays a
            # secret to redact (artbot.report.output.secret_forms redacts its stripped forms too).
            token=tokens[0].strip() or None if tokens else None,
            token_variable=next((k for k in TOKEN_VARIABLES if env.get(k)), None),
            secrets=secrets,
            repository=env.get("GITHUB_REPOSITORY") or None,
            api_url=env.get("GITHUB_API_URL") or None,
            in_actions=env.get("GITHUB_ACTIONS") == "true",
            secondary_rate_wait=_seconds(env, RATE_WAIT_VARIABLE, DEFAULT_SECONDARY_RATE_WAIT),
            # PyGithub takes whole seconds: a fraction is rounded up.
            github_timeout=math.ceil(
                _seconds(env, TIMEOUT_VARIABLE, DEFAULT_GITHUB_TIMEOUT, positive=True)
            ),
            tool_repository=tool_repository,
            workspace=Path(env["GITHUB_WORKSPACE"]) if env.get("GITHUB_WORKSPACE") else None,
            wheel_cache=default_wheel_cache(env),
            sandbox_transcript=Path(t) if (t := env.get(TRANSCRIPT_VARIABLE)) else None,
            search_path=env.get("PATH"),
            child_env=without_tokens(env),
            runner={
                k: v
                for k, v in without_tokens(env).items()
                if k.startswith("INPUT_") or k in RUNNER_VARIABLES
            },
        )

    def with_gh_token(self, api_url: str | None, run: Callable[..., Any] | None = None) -> Settings:
        """These settings with the gh CLI's token (``gh auth token``) when neither token variable
        is set, gh is installed and signed in, and the API is github.com's (a token of
        github.com is never sent to another host, nor to the sandbox); else unchanged. Never
        in Actions, where the workflow gives the token. Said by the caller (``token_source``)."""
        if self.token or self.in_actions or (api_url or self.api_url or GITHUB_API) != GITHUB_API:
            return self
        import shutil
        import subprocess

        gh = shutil.which("gh", path=self.search_path)
        if gh is None:
            return self
        try:
            proc = (run or subprocess.run)(
                [gh, "auth", "token", "--hostname", "github.com"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
                env=dict(self.child_env),
            )
        except (OSError, subprocess.SubprocessError):
            return self
        token = (proc.stdout or "").strip()
        if proc.returncode != 0 or not token or any(ch.isspace() for ch in token):
            return self  # not signed in (gh says so on its stderr, which is not shown)
        return replace(
            self, token=token, secrets=(*self.secrets, token), token_source="`gh auth token`"
        )

    @classmethod
    def for_errors(cls, env: Mapping[str, str] | None = None) -> Settings:
        """What printing an error needs (the secrets to redact, annotations or not), read where
        :meth:`from_env` itself failed: nothing here can be a bad value."""
        env = os.environ if env is None else env
        secrets = tuple(v for k in TOKEN_VARIABLES if (v := env.get(k)))
        return cls(secrets=secrets, in_actions=env.get("GITHUB_ACTIONS") == "true")

    def __repr__(self) -> str:
        token = "***" if self.token else None
        return (
            f"Settings(root={self.root!r}, debug={self.debug}, token={token}, "
            f"repository={self.repository!r}, api_url={self.api_url!r}, "
            f"in_actions={self.in_actions}, secondary_rate_wait={self.secondary_rate_wait})"
        )


def _seconds(env: Mapping[str, str], name: str, default: float, *, positive: bool = False) -> float:
    """``$name`` as a number of seconds (unset or empty: ``default``; 0 too, unless
    ``positive``); else exit 2, named."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        from .errors import BadInput

        least = "more than 0" if positive else "0 or more"
        raise BadInput(f"${name}: not a number of seconds ({least}): {raw[:40]!r}")
    return value


def user_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """artbot's folder in the user's cache directory: ``$XDG_CACHE_HOME/artbot``, else
    ``~/.cache/artbot``: the ETag cache and the copy of the shipped records
    (:mod:`artbot.records.root`); the wheels too, unless ``$ARTBOT_CACHE_DIR``."""
    env = os.environ if env is None else env
    base = env.get(XDG_CACHE_VARIABLE)
    return (Path(base) if base else Path.home() / ".cache") / "artbot"


def default_wheel_cache(env: Mapping[str, str] | None = None) -> Path:
    """``$ARTBOT_CACHE_DIR``, else ``~/.cache/artbot/wheels``."""
    env = os.environ if env is None else env
    folder = env.get(CACHE_VARIABLE)
    return Path(folder) if folder else Path.home() / ".cache" / "artbot" / "wheels"


def environment() -> dict[str, str]:
    """A copy of the process environment, for a module that hands it (cleaned) to a child."""
    return dict(os.environ)


def without_tokens(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` minus every token variable and every variable whose name says it holds a
    credential (for subprocesses that must not see one: repros, git in someone's checkout)."""
    return {
        k: v
        for k, v in env.items()
        if k not in TOKEN_VARIABLES and not any(w in k.upper() for w in SECRET_NAME_WORDS)
    }
