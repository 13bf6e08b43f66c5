"""#40.1: artbot where maintainers are. Installed non-editable (a built package, not this
checkout), from a folder that is not an artbot checkout, artbot lists, renders and exports the
tests from the records it ships (pyproject.toml's package data: artbot/_audit); ``--root`` still
points at another set of records. export-tests says what it wrote, refuses a different file of
the same name without --force, and says so when it writes nothing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from setuptools import find_packages

from artbot.cli import cli
from artbot.records.root import find_root, packaged_root
from artbot.repro.export import regression_tests

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "artbot", "findings", "templates", "repros")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The package built and installed (pip, not editable) into a folder of its own, from a copy
    of the sources (the build writes build/ and *.egg-info where it runs)."""
    base = tmp_path_factory.mktemp("install")
    source = base / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=ignore)
        else:
            shutil.copy2(path, source / name)
    target = base / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile"]
    pip += ["--no-build-isolation", "--disable-pip-version-check", "--target", str(target)]
    proc = subprocess.run(
        [*pip, str(source)], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr
    yield target


def artbot_in(
    folder: Path, site: Path, *args: str, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GH_TOKEN", "GITHUB_TOKEN")}
    env |= {"PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": "1", "GITHUB_ACTIONS": ""}
    # The user's cache directory (records copy, ETags): the test's own, never the real one.
    env |= {"XDG_CACHE_HOME": str(site.parent / "xdg-cache")}
    env |= env_extra or {}
    return subprocess.run(
        [sys.executable, "-m", "artbot", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_built_package_holds_every_package_and_the_audits_records(installed: Path) -> None:
    listed = set(find_packages(str(REPO), include=["artbot", "artbot.*"]))
    assert listed <= {
        p.relative_to(installed).as_posix().replace("/", ".")
        for p in (installed / "artbot").rglob("*")
        if (p / "__init__.py").is_file()
    } | {"artbot"}
    shipped = installed / "artbot" / "_audit"
    for folder in ("findings", "templates", "repros"):
        tracked = {p.relative_to(REPO) for p in (REPO / folder).rglob("*") if p.is_file()}
        tracked = {p for p in tracked if "__pycache__" not in p.parts and p.suffix != ".pyc"}
        assert {
            p.relative_to(shipped) for p in (shipped / folder).rglob("*") if p.is_file()
        } == tracked


def test_an_installed_artbot_lists_renders_and_exports_from_another_folder(
    installed: Path, tmp_path: Path
) -> None:
    art = tmp_path / "ART"
    (art / "tests").mkdir(parents=True)
    listed = artbot_in(art, installed, "list")
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) == len(list((REPO / "findings").glob("[0-9f]*.yaml")))
    assert "7" in [line.split()[0] for line in listed.stdout.splitlines()]
    shown = artbot_in(art, installed, "render", "--item", "7")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("# ") and "Labels: " in shown.stdout
    version = artbot_in(art, installed, "--version", "--verbose")
    assert str(installed / "artbot" / "_audit") in version.stdout, version.stdout

    exported = artbot_in(art, installed, "export-tests", "--out", "tests")
    assert exported.returncode == 0, exported.stderr
    names = sorted(p.name for p in regression_tests(REPO))
    assert sorted(p.name for p in (art / "tests").iterdir()) == names
    assert exported.stdout.splitlines() == [f"wrote tests/{n}" for n in names]
    assert not list(art.glob("findings")) and not list(art.glob(".artbot"))


def test_export_tests_keeps_a_different_file_unless_forced(tmp_path: Path) -> None:
    out = tmp_path / "tests"
    names = [p.name for p in regression_tests(REPO)]
    run = CliRunner().invoke
    first = run(cli, ["--root", str(REPO), "export-tests", "--out", str(out)])
    assert first.exit_code == 0 and first.stdout.count("wrote ") == len(names), first.output
    again = run(cli, ["--root", str(REPO), "export-tests", "--out", str(out)])
    assert again.exit_code == 0, again.output
    assert again.stdout.splitlines()[-1] == (
        f"nothing written: the {len(names)} tests in {out} are already these"
    )
    mine = out / names[0]
    mine.write_text("# ART's own test of the same name\n", encoding="utf-8")
    refused = run(cli, ["--root", str(REPO), "export-tests", "--out", str(out)])
    assert refused.exit_code == 2
    assert refused.stderr.count("\n") == 1 and names[0] in refused.stderr, refused.stderr
    assert "--force" in refused.stderr
    assert mine.read_text(encoding="utf-8") == "# ART's own test of the same name\n"
    forced = run(cli, ["--root", str(REPO), "export-tests", "--out", str(out), "--force"])
    assert forced.exit_code == 0 and forced.stdout.splitlines() == [
        f"{'wrote' if n == names[0] else 'unchanged'} {out / n}" for n in names
    ], forced.output
    assert mine.read_bytes() == (REPO / "repros" / "regression" / names[0]).read_bytes()


def test_export_tests_from_records_without_tests_says_nothing_was_written(tmp_path: Path) -> None:
    (tmp_path / "findings").mkdir()
    result = CliRunner().invoke(
        cli, ["--root", str(tmp_path), "export-tests", "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 2
    assert result.stderr.strip().endswith("no regression tests (test_*.py); nothing written")


def test_the_etag_cache_of_the_installed_records_is_kept_in_the_users_cache(
    installed: Path, tmp_path: Path
) -> None:
    """#54: `open` and `sync` left `.artbot/` in ART's working tree; the ETag cache of the
    records installed with artbot is kept in the user's cache directory."""
    probe = (
        "from artbot.records.root import default_cache_path, find_root; "
        "print(default_cache_path(find_root(None)))"
    )
    env = {**os.environ, "PYTHONPATH": str(installed), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.stdout.strip() == str(tmp_path / "xdg" / "artbot" / "etags" / "cache.json")


def test_a_record_from_an_installed_artbot_goes_to_the_users_copy_and_says_so(
    installed: Path, tmp_path: Path, wheel_cache: Path
) -> None:
    """#54: `verify --release 0.5.23 --record` from an installed artbot wrote 15 files into
    site-packages/artbot/_audit and did not say where. Now the package is never written: the
    record goes into the user's copy of the records (made once), the run says where, and
    later runs read that copy."""
    from artbot.settings import CACHE_VARIABLE

    art = tmp_path / "ART"
    (art / "src" / "art").mkdir(parents=True)
    shipped = installed / "artbot" / "_audit"
    before = {p: p.stat().st_mtime_ns for p in shipped.rglob("*") if p.is_file()}
    xdg = tmp_path / "xdg"
    env = {CACHE_VARIABLE: str(wheel_cache), "XDG_CACHE_HOME": str(xdg)}
    recorded = artbot_in(
        art, installed, "verify", "anchors", "--release", "0.5.21", "--record", env_extra=env
    )
    copy = xdg / "artbot" / "records" / "0.1.0"
    dating = copy / "findings" / "status" / "anchors.json"
    assert dating.is_file(), recorded.stderr
    assert f"records into your copy, {copy}" in recorded.stderr
    assert f"recorded the anchors at 0.5.21 in {dating}" in recorded.stderr
    assert {p: p.stat().st_mtime_ns for p in shipped.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in art.rglob("*")) == ["art", "src"]  # ART's tree untouched
    version = artbot_in(art, installed, "--version", "--verbose", env_extra=env)
    assert str(copy) in version.stdout, version.stdout


def test_export_tests_defaults_to_arts_layout_in_an_art_checkout(
    installed: Path, tmp_path: Path
) -> None:
    """#54: ART's CI runs `pytest tests/unit`; in ART's checkout (it has src/art/) the tests
    go there without --out. Anywhere else --out is needed: exit 2, one line, nothing made."""
    art = tmp_path / "ART"
    (art / "src" / "art").mkdir(parents=True)
    exported = artbot_in(art, installed, "export-tests")
    assert exported.returncode == 0, exported.stderr
    names = sorted(p.name for p in regression_tests(REPO))
    assert sorted(p.name for p in (art / "tests" / "unit").iterdir()) == names
    assert exported.stdout.splitlines() == [f"wrote tests/unit/{n}" for n in names]
    elsewhere = artbot_in(tmp_path, installed, "export-tests")
    assert elsewhere.returncode == 2
    [line] = elsewhere.stderr.splitlines()
    assert "not an ART checkout (no src/art/)" in line and "--out DIR" in line
    assert not (tmp_path / "tests").exists()


def test_the_root_is_the_current_folder_with_findings_else_the_shipped_records(
    tmp_path: Path,
) -> None:
    assert packaged_root() == REPO  # a checkout: its own records
    assert find_root(None, tmp_path) == REPO
    (tmp_path / "findings").mkdir()
    assert find_root(None, tmp_path) == tmp_path
    assert find_root(tmp_path / "other", tmp_path) == tmp_path / "other"


def test_an_installed_artbot_verifies_from_another_folder(
    installed: Path, tmp_path: Path, wheel_cache: Path
) -> None:
    """verify's anchors against a cached release: the records and repros that ship with the
    package, read from a folder that has none."""
    from artbot.settings import CACHE_VARIABLE

    checked = artbot_in(
        tmp_path,
        installed,
        "verify",
        "anchors",
        "--release",
        "0.5.21",
        env_extra={CACHE_VARIABLE: str(wheel_cache)},
    )
    # Exit 1: some cited ranges moved at 0.5.21 (as from the checkout: the same records).
    here = artbot_in(
        REPO,
        installed,
        "verify",
        "anchors",
        "--release",
        "0.5.21",
        env_extra={CACHE_VARIABLE: str(wheel_cache)},
    )
    assert (checked.returncode, checked.stdout) == (here.returncode, here.stdout), checked.stderr
    assert re.match(r"\d+ locations: \d+ ok", checked.stdout.rstrip().splitlines()[-1])
    assert list(tmp_path.iterdir()) == []
