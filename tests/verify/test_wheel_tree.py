"""#36.1: no tool runs on a tree artbot did not write, except inside the confinement.

A wheel is checked entry by entry before a byte is unpacked (no ``.git``, ``..``, absolute
path, symlink, device, top-level file; caps on size and count; METADATA's version) and is never
taken for a git checkout. In an ``--art-src`` checkout git reads objects only: the crafted
partial clone below, whose promisor remote's ``uploadpack`` is a payload and whose tag
``e2a406a48`` names a missing object, made git run the payload through artbot's former
``git -c core.fsmonitor=false -c core.hooksPath=/dev/null -C checkout rev-parse`` (checked by
hand on git 2.39.5); here the payload's marker must never appear.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.errors import ReleaseUnavailable
from artbot.verify import wheel as wheelmod
from artbot.verify.gitread import ObjectReader, head_commit
from artbot.verify.release import unpack
from artbot.verify.tree import open_tree
from artbot.verify.wheel import BadWheel
from tests.helpers.confine import CANARY, REPO, catalog, record_pin
from tests.helpers.wheels import crafted_wheel

WHEEL = "openpipe_art-9.9.9-py3-none-any.whl"
AUDIT = "e2a406a48"


def _zip(entries: list[tuple[zipfile.ZipInfo | str, bytes]], version: str = "9.9.9") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as whl:
        for info, data in entries:
            whl.writestr(info, data)
        meta = f"Metadata-Version: 2.1\nName: openpipe-art\nVersion: {version}\n"
        whl.writestr("openpipe_art-9.9.9.dist-info/METADATA", meta)
    return buffer.getvalue()


def _typed(name: str, kind: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (kind | 0o777) << 16
    return info


BAD: dict[str, tuple[zipfile.ZipInfo | str, bytes]] = {
    "dot-dot": ("../evil.py", b"x"),
    "dot-dot-inside": ("art/../../evil.py", b"x"),
    "absolute": ("/tmp/evil.py", b"x"),
    "git-folder": (".git/config", b"[core]"),
    "git-inside-a-package": ("art/.git/config", b"[core]"),
    "top-level-file": ("evil.py", b"x"),
    "backslash": ("art\\..\\evil.py", b"x"),
    "symlink": (_typed("art/link.py", stat.S_IFLNK), b"/etc/passwd"),
    "device": (_typed("art/dev", stat.S_IFCHR), b""),
    "fifo": (_typed("art/fifo", stat.S_IFIFO), b""),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_wheel_with_a_bad_entry_is_refused_and_nothing_is_written(
    tmp_path: Path, name: str
) -> None:
    data = _zip([("art/__init__.py", b""), BAD[name]])
    dest = tmp_path / "out" / "openpipe_art-9.9.9-py3-none-any"
    with pytest.raises(BadWheel) as refused:
        unpack(data, dest, WHEEL)
    assert isinstance(refused.value, ReleaseUnavailable)  # exit 1, one line
    assert not dest.exists() and not (tmp_path / "evil.py").exists()


def test_the_caps_stop_a_zip_bomb_and_too_many_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wheelmod, "MAX_TOTAL_BYTES", 1_000_000)
    bomb = _zip([("art/__init__.py", b""), ("art/zeros.py", b"\0" * 2_000_000)])
    assert len(bomb) < 50_000  # it compresses to almost nothing
    with pytest.raises(BadWheel, match="over the cap"):
        unpack(bomb, tmp_path / "a", WHEEL)
    monkeypatch.setattr(wheelmod, "MAX_FILES", 10)
    many = _zip([(f"art/m{n}.py", b"") for n in range(11)])
    with pytest.raises(BadWheel, match="entries, over the cap of 10"):
        unpack(many, tmp_path / "b", WHEEL)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_zip_that_lies_about_its_sizes_is_refused(tmp_path: Path) -> None:
    """The caps are not taken from the zip's word: an entry whose headers understate its size
    (100 bytes said, 300,000 inside) is read only as far as said, and then fails its CRC."""
    data = bytearray(_zip([("art/__init__.py", b""), ("art/big.py", b"a" * 300_000)]))
    name = b"art/big.py"
    for signature, size_at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        start = 0
        while (start := data.find(signature, start)) != -1:
            name_at = start + (30 if signature == b"PK\x03\x04" else 46)
            if data[name_at : name_at + len(name)] == name:
                data[start + size_at : start + size_at + 4] = (100).to_bytes(4, "little")
            start += 4
    with pytest.raises(BadWheel):
        unpack(bytes(data), tmp_path / "c", WHEEL)
    assert not (tmp_path / "c" / "art" / "big.py").exists() or (
        (tmp_path / "c" / "art" / "big.py").stat().st_size <= 100
    )


def test_metadata_must_state_the_version_of_the_file_name(tmp_path: Path) -> None:
    with pytest.raises(BadWheel, match="METADATA says version '9.9.8', the file name 9.9.9"):
        unpack(_zip([("art/__init__.py", b"")], version="9.9.8"), tmp_path / "d", WHEEL)
    no_meta = io.BytesIO()
    with zipfile.ZipFile(no_meta, "w") as whl:
        whl.writestr("art/__init__.py", "")
    with pytest.raises(BadWheel, match="no openpipe_art-9.9.9.dist-info/METADATA"):
        unpack(no_meta.getvalue(), tmp_path / "e", WHEEL)
    good = unpack(
        _zip([("art/__init__.py", b""), ("art/loss.py", b"x = 1\n")]), tmp_path / "f", WHEEL
    )
    assert (good / "art" / "loss.py").read_text() == "x = 1\n"
    assert stat.S_IMODE((good / "art" / "loss.py").stat().st_mode) == 0o644


def _payload(place: Path) -> Path:
    """A program that leaves a marker and the environment it was given."""
    script = place / "payload.sh"
    script.write_text(f"#!/bin/sh\nenv > {place / 'MARKER'}\nexit 1\n")
    script.chmod(0o755)
    return script


def _git(repo: Path, *args: str) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(repo.parent)}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    proc = subprocess.run(
        ["git", *ident, "-C", str(repo), *args], env=env, capture_output=True, text=True,
        check=True, timeout=60,
    )  # fmt: skip
    return proc.stdout.strip()


def promisor_checkout(place: Path, art: dict[str, str]) -> Path:
    """An ART checkout made a partial clone whose promisor remote runs the payload, with an
    ``http.extraheader`` credential and a tag named like the audit commit naming a missing
    object."""
    repo = place / "art-src"
    for rel, text in art.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "art")
    for key, value in (
        ("core.repositoryformatversion", "1"),
        ("extensions.partialClone", "origin"),
        ("remote.origin.url", str(place / "nowhere")),
        ("remote.origin.promisor", "true"),
        ("remote.origin.uploadpack", str(_payload(place))),
        ("http.extraheader", f"AUTHORIZATION: basic {CANARY}"),
    ):
        _git(repo, "config", key, value)
    (repo / ".git" / "refs" / "tags" / AUDIT).write_text("12345678" * 5 + "\n")
    return repo


def test_the_promisor_checkout_does_run_its_payload_through_plain_git(tmp_path: Path) -> None:
    """The attack is real: git as artbot ran it before fetches and runs the payload."""
    repo = promisor_checkout(tmp_path, {"src/art/loss.py": "x = 1\n"})
    safe = ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"]
    subprocess.run(
        ["git", *safe, "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{AUDIT}^{{commit}}"],
        capture_output=True, check=False, timeout=60,
    )  # fmt: skip
    assert (tmp_path / "MARKER").exists()


def test_artbot_reads_a_promisor_checkout_without_running_anything(tmp_path: Path) -> None:
    repo = promisor_checkout(tmp_path, {"src/art/loss.py": "x = 1\n"})
    reader = ObjectReader(repo)
    assert reader.resolve(AUDIT) is None  # the tag is no commit of the audit's
    head = head_commit(repo)
    assert head is not None and len(head) == 40
    assert reader.resolve(head[:9]) == head  # a short hash resolves to the full one
    assert reader.blob(head, "src/art/loss.py") == b"x = 1\n"
    assert reader.blob("12345678" * 5, "src/art/loss.py") is None  # missing: no lazy fetch
    # A tag named like a real commit's short hash, pointing at another object, is not seen.
    _git(repo, "tag", head[:12], _git(repo, "hash-object", "-w", "--stdin"))
    assert reader.resolve(head[:12]) == head
    (repo / ".git" / "objects" / "pack" / "pack-0.promisor").touch()
    from artbot.records.catalog import load_catalog

    tree = open_tree(repo, load_catalog(REPO).audit)
    assert tree.git_dir is None and any("a partial clone" in note for note in tree.notes)
    assert not (tmp_path / "MARKER").exists()


@pytest.mark.e2e
def test_verify_on_a_promisor_checkout_runs_no_payload_and_leaks_no_credential(
    tmp_path: Path,
) -> None:
    """``verify --art-src`` on the crafted checkout, from a shell holding a token: the payload
    never runs, the audit commit is not taken from the tag, and the checkout's credential
    appears nowhere."""
    root = catalog(tmp_path)
    repo = promisor_checkout(tmp_path, {"src/art/__init__.py": "", "src/art/loss.py": "x = 1\n"})
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO)}
    env.update(GH_TOKEN=CANARY, HOME=str(tmp_path))
    command = [sys.executable, "-m", "artbot", "--root", str(root), "verify", "--art-src"]
    proc = subprocess.run(
        [*command, str(repo), "--record"], env=env, capture_output=True, text=True,
        timeout=300, check=False, cwd=tmp_path,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert not (tmp_path / "MARKER").exists(), output
    assert f"the audit commit {AUDIT} is not in" in output, output
    assert CANARY not in output
    status = root / "findings" / "status" / "07.json"
    if status.exists():
        assert CANARY not in status.read_text()


def test_a_wheel_is_never_taken_for_a_checkout(tmp_path: Path) -> None:
    from artbot.records.catalog import load_catalog

    folder = tmp_path / "unpacked"
    (folder / "src" / "art").mkdir(parents=True)
    (folder / "src" / "art" / "__init__.py").write_text("")
    (folder / ".git").mkdir()
    audit = load_catalog(REPO).audit
    assert open_tree(folder, audit, wheel=True).git_dir is None


def test_a_wheel_shipping_git_is_refused_by_verify_release(tmp_path: Path) -> None:
    root = catalog(tmp_path)
    cache = tmp_path / "wheels"
    cache.mkdir()
    files = {
        "art/__init__.py": "",
        "art/loss.py": f"open({str(tmp_path / 'RAN')!r}, 'w')\n",
        ".git/config": '[extensions]\n\tpartialClone = origin\n[remote "origin"]\n'
        f"\tpromisor = true\n\turl = {tmp_path}\n\tuploadpack = {_payload(tmp_path)}\n",
        f".git/refs/tags/{AUDIT}": "12345678" * 5 + "\n",
        ".git/HEAD": "ref: refs/heads/main\n",
    }
    wheel = crafted_wheel(cache / WHEEL, files)
    record_pin(root, "9.9.9", hashlib.sha256(wheel.read_bytes()).hexdigest())
    env = {"ARTBOT_CACHE_DIR": str(cache), "GH_TOKEN": None, "GITHUB_TOKEN": None}
    result = CliRunner(env=env).invoke(cli, ["--root", str(root), "verify", "--release", "9.9.9"])
    assert result.exit_code == 1, result.output
    assert "'.git/config' is a hidden folder or git's" in result.output
    assert not (tmp_path / "MARKER").exists() and not (tmp_path / "RAN").exists()


@pytest.mark.e2e
@pytest.mark.repro
def test_a_relative_art_src_gives_the_verdicts_of_the_absolute_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#40: ``verify code --art-src w/0.5.23`` from the folder above it."""
    import json

    from tests.helpers.wheels import default_wheels

    root = catalog(tmp_path)
    tree = tmp_path / "w" / "0.5.23"
    shutil.copytree(default_wheels().tree("0.5.23"), tree)
    monkeypatch.chdir(tmp_path)
    env = {"GH_TOKEN": None, "GITHUB_TOKEN": None, "GITHUB_ACTIONS": None}

    def verdicts(art_src: str) -> list[tuple[int, str, dict[str, str]]]:
        args = ["--root", str(root), "verify", "code", "--art-src", art_src, "--json"]
        result = CliRunner(env=env).invoke(cli, args)
        data = json.loads(result.output[result.output.index("{") :])
        return [
            (r["item"], r["status"], {k: c["verdict"] for k, c in r["claims"].items()})
            for r in data["results"]
        ]

    relative, absolute = verdicts("w/0.5.23"), verdicts(str(tree))
    assert relative == absolute
    assert all(status != "could not run" for _, status, _ in relative), relative
