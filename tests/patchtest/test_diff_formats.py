"""#52: `artbot test` takes every unified diff ``git apply`` takes, made by the tools a maintainer
uses: ``git diff``, ``git format-patch`` mail, ``diff -u`` of one file, ``diff -ruN`` of two
trees (whatever their folder names), and two unpacked wheels diffed (``art/``, which artbot reads
as ``src/art/``). Each is made here by the real tool from the same edit (a change, a new file, a
deleted file), ``git apply --check`` accepts it in a checkout (but the wheels'), and artbot's
applier turns the old tree into the new one, byte for byte."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from artbot.patchtest.command import Request, parse_command
from artbot.patchtest.diff import DiffRefused, apply_to_folder, parse_diff

OLD = {
    "src/art/loss.py": "import torch\n\n\ndef f(x):\n    return torch.exp(x)\n\n\nY = 1\n",
    "src/art/gone.py": "A = 1\nB = 2\n",
}
NEW = {
    "src/art/loss.py": (
        "import torch\n\n\ndef f(x):\n    return torch.exp(x.clamp(-20, 20))\n\n\nY = 1\n"
    ),
    "src/art/added.py": "C = 3\n",
}


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _run(argv: list[str], cwd: Path, ok: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode in ok, done.stderr
    return done.stdout


def _git(repo: Path, *args: str) -> str:
    env = ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
    return _run(["git", *env, *args], repo)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A checkout at OLD with NEW committed on top (HEAD~1 is OLD)."""
    if shutil.which("git") is None:
        pytest.skip("no git")
    repo = _tree(tmp_path / "ART", OLD)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "old")
    (repo / "src/art/gone.py").unlink()
    _tree(repo, NEW)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "clamp the log-ratio", "-m", "--- a note in the message")
    return repo


def _diffs(repo: Path, tmp_path: Path) -> dict[str, str]:
    """The same edit, as each tool prints it."""
    old = _tree(tmp_path / "ART.orig", OLD)
    new = _tree(tmp_path / "ART-fixed", NEW)
    wheels = tmp_path / "wheels"
    for name, files in (("0.5.23", OLD), ("fixed", NEW)):
        _tree(wheels / name, {k.removeprefix("src/"): v for k, v in files.items()})
    one = ["diff", "-u", "ART.orig/src/art/loss.py", "ART-fixed/src/art/loss.py"]
    return {
        "git diff": _git(repo, "diff", "HEAD~1", "HEAD"),
        "git format-patch": _git(repo, "format-patch", "-1", "--stdout"),
        "diff -ruN": _run(["diff", "-ruN", old.name, new.name], tmp_path, ok=(1,)),
        "diff -u": _run(one, tmp_path, ok=(1,)),
        "diff -ruN wheels": _run(["diff", "-ruN", "0.5.23", "fixed"], wheels, ok=(1,)),
    }


def test_every_kind_git_apply_takes_applies_to_the_same_tree(repo: Path, tmp_path: Path) -> None:
    diffs = _diffs(repo, tmp_path)
    assert diffs["diff -ruN"].startswith("diff -ruN ")
    _git(repo, "checkout", "-q", "HEAD~1")
    for kind, text in diffs.items():
        (tmp_path / "the.diff").write_text(text, encoding="utf-8")
        if kind != "diff -ruN wheels":  # a wheel's art/ is src/art/ in the checkout
            _git(repo, "apply", "--check", str(tmp_path / "the.diff"))  # git takes it
        files = parse_diff(text)
        release = _tree(
            tmp_path / kind / "release", {k.removeprefix("src/"): v for k, v in OLD.items()}
        )
        apply_to_folder(release, files)
        got = {
            f"src/{p.relative_to(release).as_posix()}": p.read_text(encoding="utf-8")
            for p in release.rglob("*.py")
        }
        expected = NEW if kind != "diff -u" else {**OLD, "src/art/loss.py": NEW["src/art/loss.py"]}
        assert got == expected, kind


def test_a_diff_ru_in_a_comment_is_a_request(repo: Path, tmp_path: Path) -> None:
    text = _diffs(repo, tmp_path)["diff -ruN"]
    parsed = parse_command(f"/artbot test 0.5.23\n\n```diff\n{text}```\n")
    assert isinstance(parsed, Request)
    assert sorted(f.path for f in parsed.files) == [
        "src/art/added.py",
        "src/art/gone.py",
        "src/art/loss.py",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "--- loss.py\n+++ loss.py\n@@ -1 +1 @@\n-a\n+b\n",  # no folder to drop (-p1)
        "--- a/setup.py\n+++ b/setup.py\n@@ -1 +1 @@\n-a\n+b\n",
        "--- a/src/art/a.py\n+++ b/src/art/a.py\n@@ -1 +1 @@\n-a\n+b\nstray text\n",
        "diff -r a/src/art/x.bin b/src/art/x.bin\n"
        "Binary files a/src/art/x.bin and b/src/art/x.bin differ\n",
    ],
)
def test_what_git_apply_would_not_take_or_artbot_does_not_apply_is_still_refused(
    text: str,
) -> None:
    with pytest.raises(DiffRefused):
        parse_diff(text)
