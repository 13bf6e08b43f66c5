"""openpipe-art releases: which one is the newest, a wheel cache filled by pip, and each wheel
pinned from outside that cache (the README's "A pin from outside the cache").

``sync --verify latest`` (the scheduled workflow) resolves the version here (:func:`resolve`),
then checks the findings against that release's own code. Newer releases need Python >= 3.12,
so pip is asked for 3.12 wheels whatever Python artbot runs on (on 3.11 pip would otherwise
answer with the last release that supports 3.11). Nothing here is hard-coded: pip is asked.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import ReleaseUnavailable
from ..inputs import check_version
from ..records.models import Audit
from ..settings import default_wheel_cache
from .tree import DISTRIBUTION, WHEEL_PREFIX, ArtTree, open_tree

# ART needs Python 3.12; the wheel is pure Python, so the tag only has to satisfy pip.
WHEEL_PYTHON = "3.12"
# The first pip that answers `pip install --dry-run --python-version 3.12` from Python 3.11, as
# measured: 23.2.1 (what `python3 -m venv` installs with 3.11) wants --target; 23.3 to 24.1
# check Requires-Python against the running Python. pyproject.toml declares it.
PIP_NEEDED = "24.2"
_OLD_PIP = ("unless installing via '--target'", "requires a different Python")


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


def old_pip(version: str) -> str:
    """One line: the pip found cannot ask the index for a 3.12 wheel's digest; which it is,
    and the one artbot needs."""
    from importlib import metadata

    try:
        found = f"pip {metadata.version('pip')}"
    except metadata.PackageNotFoundError:
        found = "the pip"
    return (
        f"{found} (of {sys.executable}) cannot ask the index for {DISTRIBUTION}=={version}'s "
        f"digest for Python {WHEEL_PYTHON}: artbot needs pip {PIP_NEEDED} or newer "
        f"(python -m pip install 'pip>={PIP_NEEDED}')"
    )


def fetch_release(
    version: str,
    cache: Path | None = None,
    *,
    run: Runner = subprocess.run,
    progress: Progress | None = None,
) -> Path:
    """The wheel of ``openpipe-art==version``: from the cache, else downloaded there by pip.
    ``progress`` hears one line before a download and one after (or that the cache had it).
    Nothing here vouches for the file: :func:`release_tree` checks it against its pin."""
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
    say(f"verify: downloaded {wheel.name} ({wheel.stat().st_size / 1e6:.1f} MB)")
    return wheel


def _cached_wheel(cache: Path, version: str) -> Path | None:
    found = sorted(cache.glob(f"{WHEEL_PREFIX}-{version}-*.whl"))
    return found[0] if found else None


_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Pin:
    """A release wheel's sha256, and where it comes from (never from the wheel cache)."""

    sha256: str
    source: str  # "from the index" or "recorded in findings/status/"
    filename: str | None = None  # the wheel's name, when the index said it


def index_pin(version: str, *, run: Runner = subprocess.run) -> Pin:
    """The sha256 the index publishes for the release's wheel: the digest pip verifies a
    download against, as ``pip install --dry-run --report`` gives it. No digest: refused."""
    check_version(version)
    command = [
        sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps",
        "--only-binary=:all:", "--python-version", WHEEL_PYTHON, "--quiet", "--report", "-",
        f"{DISTRIBUTION}=={version}",
    ]  # fmt: skip
    proc = run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        output = f"{proc.stdout or ''}\n{proc.stderr or ''}"
        if any(words in output for words in _OLD_PIP):
            raise ReleaseUnavailable(old_pip(version))
        raise ReleaseUnavailable(pip_failure(version, output))
    try:
        [entry] = json.loads(proc.stdout)["install"]
        info = entry["download_info"]
        filename = str(info["url"]).rsplit("/", 1)[-1].split("#", 1)[0]
        digest = (info.get("archive_info") or {}).get("hashes", {}).get("sha256")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ReleaseUnavailable(f"pip's report on {DISTRIBUTION}=={version}: {exc!r}") from None
    if not isinstance(digest, str) or not _SHA256_RE.match(digest):
        raise ReleaseUnavailable(
            f"the index publishes no sha256 for {filename}: artbot runs no release it cannot "
            "pin from outside its cache"
        )
    return Pin(digest, "from the index", filename)


def recorded_pin(root: Path, version: str) -> Pin | None:
    """The wheel sha256 that ``verify --record`` wrote for ``version`` in findings/status/
    (None when none is recorded); two different ones are refused."""
    from ..status import release_points

    found = {p.wheel_sha256 for p in release_points(root) if p.label == version and p.wheel_sha256}
    if len(found) > 1:
        raise ReleaseUnavailable(
            f"findings/status/ records {len(found)} different wheel digests for {version}"
        )
    return Pin(found.pop(), "recorded in findings/status/") if found else None


def unpack(data: bytes, dest: Path, wheel_name: str | None = None) -> Path:
    """Unpack a wheel's bytes into ``dest`` (a new folder; the wheel's file name is
    ``wheel_name``, else ``dest``'s name + ``.whl``), each entry checked first (:mod:`.wheel`:
    package folders and its dist-info only, no link or device, size caps, METADATA's version)."""
    from .wheel import unpack_wheel

    return unpack_wheel(data, dest, wheel_name or f"{dest.name}.whl")


def fresh_folder() -> Path:
    """A new folder for one unpacked release, removed when the process ends."""
    folder = Path(tempfile.mkdtemp(prefix="artbot-release-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def release_tree(
    version: str,
    audit: Audit,
    cache: Path | None = None,
    progress: Progress | None = None,
    *,
    pin: Pin | None = None,
    into: Path | None = None,
    run: Runner = subprocess.run,
) -> ArtTree:
    """``openpipe-art==version``, its wheel (fetched into the cache if needed) checked against
    ``pin`` (else the index's digest, asked of pip) and unpacked afresh into ``into`` (else a
    new temporary folder): what runs is what the index serves, whatever the cache holds."""
    wheel = fetch_release(version, cache, run=run, progress=progress)
    pin = pin or index_pin(version, run=run)
    if pin.filename and pin.filename != wheel.name:
        raise ReleaseUnavailable(
            f"the index serves {pin.filename} for {version}; the cache holds {wheel.name}"
        )
    # Hashed and unpacked from the same bytes: the file cannot change in between.
    data = wheel.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != pin.sha256:
        raise ReleaseUnavailable(
            f"{wheel} is not the release: sha256 {digest}, the release's is {pin.sha256} "
            f"({pin.source}); delete it to download it again"
        )
    folder = unpack(data, (into or fresh_folder()) / wheel.name.removesuffix(".whl"), wheel.name)
    tree = open_tree(folder, audit, label=f"{DISTRIBUTION} {version}", wheel=True)
    note = f"wheel {wheel.name}, sha256 {digest} ({pin.source}), unpacked afresh"
    return replace(tree, sha256=digest, notes=(*tree.notes, note))
