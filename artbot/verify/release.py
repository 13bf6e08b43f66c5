"""openpipe-art releases: which one is the newest, and a wheel cache filled by pip, unpacked once.

``sync --verify latest`` (the scheduled workflow) resolves the version here (:func:`resolve`),
then checks the findings against that release's own code. Newer releases need Python >= 3.12,
so pip is asked for 3.12 wheels whatever Python artbot runs on (on 3.11 pip would otherwise
answer with the last release that supports 3.11). Nothing here is hard-coded: pip is asked.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..errors import ReleaseUnavailable
from ..inputs import check_version
from ..models import Audit
from ..settings import CACHE_VARIABLE, default_wheel_cache
from .tree import DISTRIBUTION, WHEEL_PREFIX, ArtTree, open_tree

# ART needs Python 3.12; the wheel is pure Python, so the tag only has to satisfy pip.
WHEEL_PYTHON = "3.12"
CACHE_ENV = CACHE_VARIABLE


def cache_dir() -> Path:
    """Where release wheels are kept: ``$ARTBOT_CACHE_DIR``, else ``~/.cache/artbot/wheels``
    (read by :mod:`artbot.settings`; a run passes ``Settings.wheel_cache`` instead)."""
    return default_wheel_cache()


_FROM_VERSIONS_RE = re.compile(r"\(from versions: ([^)]*)\)")
Runner = Callable[..., subprocess.CompletedProcess[str]]
_ANSWER_RE = re.compile(rf"^{re.escape(DISTRIBUTION)} \(([0-9][0-9A-Za-z.+!-]*)\)\s*$", re.M)


def newest_release(*, run: Runner = subprocess.run) -> str:
    """The newest version of openpipe-art with a wheel for Python 3.12, e.g. ``0.5.23``."""
    command = [
        sys.executable, "-m", "pip", "index", "versions", "--python-version", WHEEL_PYTHON,
        "--only-binary=:all:", DISTRIBUTION,
    ]  # fmt: skip
    proc = run(command, capture_output=True, text=True, check=False)
    found = _ANSWER_RE.search(proc.stdout or "")
    if proc.returncode != 0 or found is None:
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-2:]
        raise ReleaseUnavailable(
            f"pip could not tell the newest {DISTRIBUTION} release: " + " / ".join(tail)
        )
    return check_version(found.group(1), "pip's newest version")


def resolve(version: str, *, run: Runner = subprocess.run) -> str:
    """``version`` itself, or the newest release for ``latest``."""
    return newest_release(run=run) if version == "latest" else version


Progress = Callable[[str], None]


def pip_failure(version: str, output: str) -> str:
    """pip's failure as one line: the versions that exist when pip lists them (its list is
    one long line), else pip's last error line."""
    listed = _FROM_VERSIONS_RE.search(output)
    if listed is not None:
        versions = [v.strip() for v in listed[1].split(",") if v.strip() and v.strip() != "none"]
        if not versions:
            return f"{DISTRIBUTION} has no release pip can download"
        shown = ", ".join(versions[-5:])
        more = f" (the newest 5 of the {len(versions)} pip lists)" if len(versions) > 5 else ""
        return f"{DISTRIBUTION} {version} is not a release; releases: {shown}{more}"
    errors = [ln.strip() for ln in output.splitlines() if ln.strip().startswith("ERROR:")]
    last = errors[-1] if errors else (output.strip().splitlines() or ["no output"])[-1]
    return f"pip could not download {DISTRIBUTION}=={version}: {last[:300]}"


def fetch_release(
    version: str,
    cache: Path | None = None,
    *,
    run: Runner = subprocess.run,
    progress: Progress | None = None,
) -> Path:
    """The wheel of ``openpipe-art==version``: from the cache, else downloaded there by pip.
    ``progress`` hears one line before a download and one after (or that the cache had it)."""
    say = progress or (lambda _: None)
    check_version(version)
    cache = Path(cache) if cache else cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    wheel = _cached_wheel(cache, version)
    if wheel:
        say(f"verify: {DISTRIBUTION} {version}: {wheel.name} from the cache ({cache})")
        return wheel
    say(f"verify: downloading {DISTRIBUTION}=={version} with pip into {cache} ...")
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--python-version", WHEEL_PYTHON, f"{DISTRIBUTION}=={version}", "-d", str(cache),
    ]  # fmt: skip
    proc = run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ReleaseUnavailable(pip_failure(version, f"{proc.stdout or ''}\n{proc.stderr or ''}"))
    wheel = _cached_wheel(cache, version)
    if wheel is None:
        raise ReleaseUnavailable(f"pip ran, but no {WHEEL_PREFIX}-{version}-*.whl is in {cache}")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    wheel.with_name(wheel.name + ".sha256").write_text(digest + "\n", encoding="utf-8")
    say(f"verify: downloaded {wheel.name} ({wheel.stat().st_size / 1e6:.1f} MB)")
    return wheel


def _cached_wheel(cache: Path, version: str) -> Path | None:
    found = sorted(cache.glob(f"{WHEEL_PREFIX}-{version}-*.whl"))
    return found[0] if found else None


_UNPACKED = ".artbot-unpacked"


def unpack_wheel(wheel: Path, dest: Path | None = None) -> Path:
    """Unpack ``wheel`` next to it (once); returns the folder that holds ``art/``."""
    dest = dest or wheel.with_name(wheel.name.removesuffix(".whl"))
    if (dest / _UNPACKED).is_file():
        return dest
    # Unpack beside the target and rename, so an interrupted run never leaves half a tree.
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".unpack-"))
    try:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(tmp)
        (tmp / _UNPACKED).write_text(wheel.name + "\n", encoding="utf-8")
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
    except zipfile.BadZipFile as exc:
        raise ReleaseUnavailable(f"{wheel} is not a valid wheel: {exc}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def release_tree(
    version: str, audit: Audit, cache: Path | None = None, progress: Progress | None = None
) -> ArtTree:
    """The unpacked wheel of ``openpipe-art==version``, fetched into the cache if needed,
    with the wheel's sha256."""
    wheel = fetch_release(version, cache, progress=progress)
    digest = wheel_digest(wheel)
    folder = unpack_wheel(wheel)
    tree = open_tree(folder, audit, label=f"{DISTRIBUTION} {version}")
    note = f"wheel {wheel.name}, sha256 {digest}"
    return replace(tree, sha256=digest, notes=(*tree.notes, note))


def wheel_digest(wheel: Path) -> str:
    """The wheel's sha256, checked against the one kept beside it when pip downloaded it
    (pip checks the index's published digest then): a cached wheel changed since is refused."""
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    kept = wheel.with_name(wheel.name + ".sha256")
    if kept.is_file():
        expected = kept.read_text(encoding="utf-8").strip()
        if expected != digest:
            raise ReleaseUnavailable(
                f"{wheel} changed since it was downloaded (sha256 {digest}, recorded "
                f"{expected[:64]}); delete it to download it again"
            )
    return digest
