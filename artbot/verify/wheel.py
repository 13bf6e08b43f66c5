"""A release wheel unpacked only when it is what a wheel may be: package folders and its
``.dist-info``, regular files, within stated caps, and the version its file name says.

The wheel's bytes are pinned (:mod:`.release`), but a pin says only that the index served them;
an index can serve a crafted wheel with its correct digest. So before a byte is written, every
entry is checked, and the whole wheel refused when one fails:

- its path: relative, ``/``-separated, no ``..``, no empty or dot-led part, no backslash or NUL;
  no hidden folder and nothing named ``.git*``; its first part a package folder (a Python
  identifier) or the wheel's own ``<name>-<version>.dist-info`` (so no top-level file);
- its type (the zip's external attributes): a regular file or a folder; never a symlink, a
  device, a FIFO or a socket;
- the caps: at most :data:`MAX_FILES` entries, :data:`MAX_FILE_BYTES` a file and
  :data:`MAX_TOTAL_BYTES` unpacked in all (a zip bomb stops at the cap: sizes are counted as the
  bytes are written, not taken from the zip's word);
- ``METADATA``'s ``Version`` equal to the file name's version.

Files are written by this module (mode 0644, folders 0755), never by ``extractall``.
"""

from __future__ import annotations

import io
import re
import stat
import zipfile
from pathlib import Path, PurePosixPath

from ..errors import ReleaseUnavailable

MAX_FILES = 5_000  # the releases checked have 388-424
MAX_FILE_BYTES = 64 * 1024 * 1024  # their largest file is 5.8 MB
MAX_TOTAL_BYTES = 256 * 1024 * 1024  # they unpack to 16.6-17.4 MB
_CHUNK = 1 << 16
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_WHEEL_NAME = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+)-[^/]+\.whl$")
_ALLOWED_TYPES = {0, stat.S_IFREG, stat.S_IFDIR}


class BadWheel(ReleaseUnavailable):
    """The wheel holds something a wheel may not: nothing of it is unpacked."""


def wheel_version(wheel_name: str) -> tuple[str, str]:
    """(distribution, version) from a wheel's file name."""
    found = _WHEEL_NAME.match(wheel_name)
    if found is None:
        raise BadWheel(f"{wheel_name!r} is not a wheel's file name")
    return found["name"], found["version"]


def entry_problem(info: zipfile.ZipInfo, dist_info: str) -> str | None:
    """Why one entry may not be unpacked (None: it may)."""
    name = info.filename
    if "\\" in name or "\x00" in name or name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return "an absolute or non-POSIX path"
    parts = PurePosixPath(name).parts
    raw = name.rstrip("/").split("/")
    if not parts or any(p in ("", ".", "..") for p in raw):
        return "a path with '..', '.' or an empty part"
    folders = raw if info.is_dir() else raw[:-1]
    if any(p.startswith(".") for p in folders) or any(p.startswith(".git") for p in raw):
        return "a hidden folder or git's (such as .git)"
    top = raw[0]
    if top != dist_info and not (_IDENTIFIER.match(top) and (len(raw) > 1 or info.is_dir())):
        return f"outside its package folders and {dist_info}"
    kind = stat.S_IFMT(info.external_attr >> 16)
    if kind == stat.S_IFLNK:
        return "a symbolic link"
    if kind not in _ALLOWED_TYPES:
        return "a device, FIFO or socket"
    if info.file_size > MAX_FILE_BYTES:
        return f"over {MAX_FILE_BYTES // 2**20} MB unpacked"
    return None


def check_wheel(archive: zipfile.ZipFile, wheel_name: str) -> list[zipfile.ZipInfo]:
    """The entries of a wheel that passes every check (see the module's docstring)."""
    dist, version = wheel_version(wheel_name)
    dist_info = f"{dist}-{version}.dist-info"
    infos = archive.infolist()
    if len(infos) > MAX_FILES:
        raise BadWheel(f"{wheel_name}: {len(infos)} entries, over the cap of {MAX_FILES}")
    seen: set[str] = set()
    for info in infos:
        problem = entry_problem(info, dist_info)
        if problem is None and info.filename.rstrip("/") in seen:
            problem = "a duplicate entry"
        if problem is not None:
            raise BadWheel(f"{wheel_name}: entry {info.filename[:200]!r} is {problem}")
        seen.add(info.filename.rstrip("/"))
    declared = sum(i.file_size for i in infos)
    if declared > MAX_TOTAL_BYTES:
        raise BadWheel(f"{wheel_name}: unpacks to {declared} bytes, over the cap")
    metadata = f"{dist_info}/METADATA"
    if metadata not in seen:
        raise BadWheel(f"{wheel_name}: no {metadata}")
    text = archive.read(metadata)[:MAX_FILE_BYTES].decode("utf-8", "replace")
    stated = re.search(r"^Version:[ \t]*(\S+)[ \t]*$", text.split("\n\n", 1)[0], re.M)
    if stated is None or stated[1] != version:
        said = stated[1][:40] if stated else "none"
        raise BadWheel(f"{wheel_name}: METADATA says version {said!r}, the file name {version}")
    return infos


def unpack_wheel(data: bytes, dest: Path, wheel_name: str) -> Path:
    """Check the wheel's bytes, then write its entries into ``dest`` (a new folder)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = check_wheel(archive, wheel_name)
            dest.mkdir(parents=True)
            total = 0
            for info in infos:
                target = dest.joinpath(*info.filename.rstrip("/").split("/"))
                if info.is_dir():
                    target.mkdir(mode=0o755, parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
                total += _copy(archive, info, target, MAX_TOTAL_BYTES - total)
    except zipfile.BadZipFile as exc:
        raise BadWheel(f"{wheel_name}: not a valid wheel: {exc}") from None
    return dest


def _copy(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, left: int) -> int:
    written = 0
    with archive.open(info) as src, open(target, "xb") as out:
        while chunk := src.read(_CHUNK):
            written += len(chunk)
            if written > min(left, MAX_FILE_BYTES):
                raise BadWheel(f"entry {info.filename[:200]!r} unpacks past the size cap")
            out.write(chunk)
    target.chmod(0o644)
    return written
