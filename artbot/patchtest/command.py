"""The ``/artbot test`` command, parsed from a comment's body (pure).

A comment is a request when its first non-blank line starts with ``/artbot test``; then, on
that line, an optional release (``0.5.23``) and either a pull request of ART's (``#1234``) or,
below, a fenced ``diff`` block holding a unified diff as ``git diff`` prints it in ART's
repository. Caps are part of parsing: a patch over :data:`MAX_PATCH_BYTES`, more than
:data:`MAX_FILES` files or :data:`MAX_HUNKS` hunks is refused, and the refusal is the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .diff import DiffRefused, FilePatch, parse_diff

COMMAND = "/artbot test"
MAX_PATCH_BYTES = 32 * 1024
MAX_FILES = 8
MAX_HUNKS = 40
MAX_COMMENT_CHARS = 65_536

_HEAD_RE = re.compile(r"^/artbot[ \t]+test(?=\s|$)(?P<rest>[^\n]*)$")
_VERSION_RE = re.compile(r"^[0-9]+(?:\.[0-9]+){1,3}$")
_PULL_RE = re.compile(r"^#([1-9][0-9]{0,8})$")
_FENCE_RE = re.compile(r"^(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[A-Za-z0-9_+-]*)[ \t]*$")


@dataclass(frozen=True)
class Request:
    """A well-formed request: a diff (parsed) or a pull request number, and a release."""

    release: str | None  # None: the newest checked release
    pull: int | None = None
    diff: str | None = None
    files: tuple[FilePatch, ...] = ()

    @property
    def source(self) -> str:
        return f"pull request #{self.pull}" if self.pull is not None else "the comment's diff"


@dataclass(frozen=True)
class Refusal:
    """A request artbot will not run: the one line it answers. ``exit_code`` is what
    ``artbot test`` exits with, as every command does for that kind of failure: 2 for bad input
    (the patch, the item), 1 when a release could not be fetched (as ``verify``)."""

    reason: str
    exit_code: int = 2


def is_command(body: str) -> bool:
    """Whether ``body`` is a ``/artbot test`` request at all (well-formed or not)."""
    first = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
    return _HEAD_RE.match(first) is not None


def parse_command(body: str) -> Request | Refusal | None:
    """``body`` as a request, a refusal (a malformed or over-cap request), or None (not one)."""
    if not is_command(body):
        return None
    if len(body) > MAX_COMMENT_CHARS:
        return Refusal(f"the comment is over the cap of {MAX_COMMENT_CHARS:,} characters")
    lines = body.strip().splitlines()
    head = _HEAD_RE.match(lines[0].strip())
    assert head is not None
    words = head["rest"].split()
    release = None
    if words and _VERSION_RE.match(words[0]):
        release, words = words[0], words[1:]
    pull = None
    if words and (found := _PULL_RE.match(words[0])):
        pull, words = int(found[1]), words[1:]
    if words:
        return Refusal(
            f"`{COMMAND}` takes an optional release, then `#PR` or a fenced diff block; "
            f"not {words[0][:40]!r}"
        )
    block = _diff_block(lines[1:])
    if pull is not None:
        if block is not None:
            return Refusal("give a pull request or a diff block, not both")
        return Request(release, pull=pull)
    if block is None:
        return Refusal(f"`{COMMAND}` needs a pull request (`#1234`) or a ```diff block")
    if isinstance(block, Refusal):
        return block
    return checked_diff(block, release)


def checked_diff(text: str, release: str | None, pull: int | None = None) -> Request | Refusal:
    """``text`` parsed as a unified diff within the caps (a pull request's diff too)."""
    size = len(text.encode("utf-8"))
    if size > MAX_PATCH_BYTES:
        return Refusal(f"the patch is {size:,} bytes, over the cap of {MAX_PATCH_BYTES:,}")
    try:
        files = parse_diff(text)
    except DiffRefused as exc:
        return Refusal(str(exc))
    if len(files) > MAX_FILES:
        return Refusal(f"the patch changes {len(files)} files, over the cap of {MAX_FILES}")
    hunks = sum(len(f.hunks) for f in files)
    if hunks > MAX_HUNKS:
        return Refusal(f"the patch has {hunks} hunks, over the cap of {MAX_HUNKS}")
    return Request(release, pull=pull, diff=text, files=tuple(files))


def _diff_block(lines: list[str]) -> str | Refusal | None:
    """The first fenced ``diff`` (or ``patch``) block's text; None when there is none."""
    for n, line in enumerate(lines):
        opened = _FENCE_RE.match(line.strip())
        if opened is None or opened["lang"].lower() not in ("diff", "patch"):
            continue
        fence = opened["fence"]
        body: list[str] = []
        for inner in lines[n + 1 :]:
            if inner.strip().startswith(fence[0] * len(fence)) and not inner.strip().strip(
                fence[0]
            ):
                return "\n".join(body) + "\n"
            body.append(inner)
        return Refusal("the ```diff block is not closed")
    return None
