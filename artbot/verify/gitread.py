"""Objects read from someone's git checkout without git reading anything else of it.

A checkout's ``.git`` is the author's: its ``config`` can name programs git runs (a promisor
remote's ``uploadpack``, run by a lazy fetch when an object is missing; ``core.fsmonitor``;
hooks), its refs can name a tag after the audit commit's short hash, and it can hold
credentials (``http.extraheader``). So git never runs *in* the checkout. It runs in a git
folder artbot writes (:class:`ObjectReader`): a ``config`` of artbot's alone (no promisor, no
remote, no extension), no refs, and the checkout's object database (``GIT_OBJECT_DIRECTORY``)
as the only thing taken from the checkout. Git reads no system or global config
(``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``), gets a minimal environment (no
token), and every transport is refused (``protocol.allow=never``) should it try to fetch.

With no refs, a short hash can only name an object: a tag called ``e2a406a48`` is not seen.
The commit is resolved to its full hash, which must start with the short one.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..settings import environment

_HEX = re.compile(r"^[0-9a-f]{7,40}$")
_FULL = re.compile(r"^[0-9a-f]{40}$")
CONFIG = "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"
SAFE_CONFIG = (
    "core.fsmonitor=", "core.hooksPath=/dev/null", "core.pager=cat", "protocol.allow=never",
    "uploadpack.packObjectsHook=", "core.sshCommand=false", "credential.helper=",
    "diff.external=", "core.alternateRefsCommand=",
)  # fmt: skip


def git_folders(checkout: Path) -> tuple[Path, Path] | None:
    """The checkout's own git folder (``.git``, or the one a ``gitdir:`` file names) and the
    common one that holds the objects (through ``commondir``), or None."""
    dot = checkout / ".git"
    if dot.is_dir():
        return dot, dot
    if not dot.is_file():
        return None
    text = dot.read_text("utf-8", "replace")[:4096].strip()
    if not text.startswith("gitdir:"):
        return None
    own = (checkout / text.removeprefix("gitdir:").strip()).resolve()
    common = own / "commondir"
    shared = (
        (own / common.read_text("utf-8", "replace").strip()).resolve() if common.is_file() else own
    )
    return (own, shared) if own.is_dir() and shared.is_dir() else None


def minimal_env(home: str) -> dict[str, str]:
    """git's whole environment: a path, a scratch home, no config but artbot's, no prompt."""
    return {
        "PATH": environment().get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_NO_LAZY_FETCH": "1",  # git >= 2.45 honours it; below, no promisor is configured
        "GIT_NO_REPLACE_OBJECTS": "1",
    }


class ObjectReader:
    """Read commits and blobs from a checkout's object database, by hash only."""

    def __init__(self, checkout: Path):
        self.checkout = Path(checkout).resolve()
        folders = git_folders(self.checkout)
        self.objects = folders[1] / "objects" if folders else None
        self._home: str | None = None

    def _git(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        if self.objects is None or not self.objects.is_dir():
            return subprocess.CompletedProcess(["git", *args], 128, b"", b"")
        if self._home is None:
            self._home = tempfile.mkdtemp(prefix="artbot-git-")
            import atexit

            atexit.register(shutil.rmtree, self._home, True)
            git_dir = Path(self._home) / "repo.git"
            (git_dir / "refs").mkdir(parents=True)
            (git_dir / "HEAD").write_text("ref: refs/heads/none\n")
            (git_dir / "config").write_text(CONFIG)
        env = minimal_env(self._home)
        env["GIT_DIR"] = str(Path(self._home) / "repo.git")
        env["GIT_OBJECT_DIRECTORY"] = str(self.objects)
        command = ["git", *(a for c in SAFE_CONFIG for a in ("-c", c)), *args]
        return subprocess.run(
            command, capture_output=True, env=env, cwd=self._home, check=False, timeout=60
        )

    def resolve(self, short: str) -> str | None:
        """The full hash of the commit ``short`` names, or None (not a commit here)."""
        if not _HEX.match(short):
            return None
        proc = self._git(
            "rev-parse", "--verify", "--quiet", "--end-of-options", f"{short}^{{commit}}"
        )
        full = proc.stdout.decode("ascii", "replace").strip()
        if proc.returncode != 0 or not _FULL.match(full) or not full.startswith(short):
            return None
        return full

    def blob(self, commit: str, path: str) -> bytes | None:
        """``path`` at ``commit`` (a full hash), raw; None when absent."""
        if not _FULL.match(commit) or path.startswith("-"):
            return None
        proc = self._git("cat-file", "blob", f"{commit}:{path}")
        return proc.stdout if proc.returncode == 0 else None


@functools.lru_cache(maxsize=8)
def reader(checkout: Path) -> ObjectReader:
    """One :class:`ObjectReader` per checkout (its git folder is made once)."""
    return ObjectReader(checkout)


def head_commit(checkout: Path) -> str | None:
    """The hash the checkout's ``HEAD`` names, read from its files (no git): a detached hash,
    or the branch's hash from ``refs/`` or ``packed-refs``."""
    folders = git_folders(Path(checkout))
    if folders is None:
        return None
    try:
        head = (folders[0] / "HEAD").read_text("utf-8", "replace")[:4096].strip()
        if _FULL.match(head):
            return head
        ref = head.removeprefix("ref:").strip()
        if not head.startswith("ref:") or not re.match(r"^refs/[A-Za-z0-9._/-]+$", ref):
            return None
        if ".." in ref:
            return None
        for base in dict.fromkeys(folders):
            loose = base / ref
            if loose.is_file():
                value = loose.read_text("utf-8", "replace")[:100].strip()
                return value if _FULL.match(value) else None
            packed = base / "packed-refs"
            if packed.is_file():
                for line in packed.read_text("utf-8", "replace").splitlines():
                    value, _, name = line.partition(" ")
                    if name == ref and _FULL.match(value):
                        return value
    except OSError:
        return None
    return None


def partial_clone(checkout: Path) -> bool:
    """Does the checkout hold promisor packs (a partial clone, objects left to fetch)?"""
    reader_ = reader(Path(checkout))
    packs = reader_.objects / "pack" if reader_.objects else None
    return bool(packs and packs.is_dir() and any(packs.glob("*.promisor")))
