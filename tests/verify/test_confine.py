"""#31.1: a release's code never runs where a token is.

A crafted release whose every module, at import, reads ``/proc/*/environ`` looking for the
token and writes into the checkout, the wheel cache, the home folder and ``/tmp``, is given
to ``verify`` (as an unpacked tree and as a wheel) by a real process started from a shell, both
holding tokens, as the user running the tests and, when that is root, as an unprivileged user
too. Either ``verify`` confines it (and it finds no token and writes nothing), or it refuses
to start, saying why: never a third outcome.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from artbot.verify.apart import CannotConfine, refusal, tokens_in
from tests.helpers.confine import CANARY, REPO, catalog, record_pin
from tests.helpers.wheels import crafted_wheel

pytestmark = [pytest.mark.e2e, pytest.mark.repro]

NOBODY = 65534

ATTACK = """
import glob, json, os, pathlib
CANARY = {canary!r}
found, wrote = [], []
for name in glob.glob('/proc/*/environ'):
    try:
        if CANARY.encode() in pathlib.Path(name).read_bytes():
            found.append(name)
    except OSError:
        pass
for target in {targets!r}:
    try:
        pathlib.Path(target).write_text('pwned')
        wrote.append(target)
    except OSError:
        pass
report = {{'token_in': found, 'wrote': wrote, 'processes': len(glob.glob('/proc/[0-9]*'))}}
raise RuntimeError('crafted release: ' + json.dumps(report))
"""
MODULES = ("art/__init__.py", "art/loss.py", "art/types.py", "art/tinker_native/data.py")


def targets(place: Path, root: Path) -> list[Path]:
    return [
        root / "findings" / "PWNED.txt",
        place / "wheels" / "PWNED.txt",
        place / "home" / "PWNED.txt",
        Path(tempfile.gettempdir()) / f"artbot-pwned-{os.getpid()}.txt",
        Path("/dev/shm") / f"artbot-pwned-{os.getpid()}.txt",
    ]


def crafted(place: Path, root: Path) -> dict[str, str]:
    text = ATTACK.format(canary=CANARY, targets=[str(t) for t in targets(place, root)])
    return dict.fromkeys(MODULES, text)


def open_to_all(*folders: Path) -> None:
    for folder in folders:
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o777 if path.is_dir() else 0o666)


def run_verify(place: Path, root: Path, args: list[str], as_nobody: bool) -> tuple[int, str]:
    """``artbot verify ...`` started from a shell; both hold the tokens."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(place / "home"),
        "ARTBOT_CACHE_DIR": str(place / "wheels"),
        "GH_TOKEN": CANARY,
        "GITHUB_TOKEN": CANARY,
        "ACTIONS_RUNTIME_TOKEN": CANARY + "-runtime",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": CANARY + "-oidc",
        "PYTHONPATH": str(REPO),
    }
    command = [sys.executable, "-m", "artbot", "--root", str(root), "verify", *args]
    shell = ["sh", "-c", '"$@"; exit $?', "sh", *command]  # the shell stays, holding the tokens
    if as_nobody:
        shell = [*drop_to_nobody(), *shell]
    proc = subprocess.run(
        shell, env=env, cwd=place, capture_output=True, text=True, timeout=300, check=False
    )
    return proc.returncode, proc.stdout + proc.stderr


def drop_to_nobody() -> list[str]:
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv (util-linux) to run verify as another user")
    drop = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    drop += ["--inh-caps=-all", "--bounding-set=-all", "--"]  # no capability kept
    code = f"import sys; sys.path.insert(0, {str(REPO)!r}); import artbot"
    probe = subprocess.run(
        [*drop, "sh", "-c", '"$@"', "sh", sys.executable, "-c", code],
        capture_output=True,
        check=False,
        timeout=60,
    )
    if probe.returncode != 0:
        pytest.skip(f"{sys.executable} or {REPO} is not readable by uid {NOBODY} here")
    return drop


def reports(output: str) -> list[dict[str, object]]:
    """What the crafted modules found, from the results' details (the only way out)."""
    data = json.loads(output[output.index("{") : output.rindex("}") + 1])
    code = data.get("code", data)
    found = []
    for result in code["results"]:
        detail = result["detail"]
        if "crafted release: " in detail:
            text = detail.split("crafted release: ", 1)[1]
            found.append(json.JSONDecoder().raw_decode(text)[0])
    return found


def assert_confined_or_refused(place: Path, root: Path, rc: int, output: str) -> str:
    assert CANARY not in output
    for target in targets(place, root):
        assert not target.exists(), f"the release's code wrote {target}"
    if rc == 2:
        assert "cannot be confined here" in output and "GH_TOKEN" in output, output
        assert "unset" not in output or "env -u GH_TOKEN" in output
        return "refused"
    seen = reports(output)
    assert seen, output  # the crafted modules did run
    for report in seen:
        # Its own PID namespace: it sees itself alone, so no other process's environment.
        assert report == {"token_in": [], "wrote": [], "processes": 1}
    assert "ran confined" in output
    return "confined"


@pytest.mark.parametrize("as_nobody", [False, True], ids=["this-user", "unprivileged-user"])
def test_a_crafted_tree_finds_no_token_and_writes_nothing(place: Path, as_nobody: bool) -> None:
    root = catalog(place)
    tree = place / "unpacked"
    for rel, text in crafted(place, root).items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    (place / "home").mkdir()
    (place / "wheels").mkdir()
    if as_nobody:
        open_to_all(place / "home", place / "wheels", root / "findings")
    rc, output = run_verify(place, root, ["code", "--art-src", str(tree), "--json"], as_nobody)
    print("verify:", assert_confined_or_refused(place, root, rc, output))


@pytest.mark.parametrize("as_nobody", [False, True], ids=["this-user", "unprivileged-user"])
def test_a_crafted_wheel_finds_no_token_and_writes_nothing(place: Path, as_nobody: bool) -> None:
    root = catalog(place)
    (place / "home").mkdir()
    cache = place / "wheels"
    cache.mkdir()
    wheel = cache / "openpipe_art-9.9.9-py3-none-any.whl"
    crafted_wheel(wheel, crafted(place, root))
    record_pin(root, "9.9.9", hashlib.sha256(wheel.read_bytes()).hexdigest())
    if as_nobody:
        open_to_all(place / "home", cache, root / "findings")
    rc, output = run_verify(place, root, ["code", "--release", "9.9.9", "--json"], as_nobody)
    print("verify:", assert_confined_or_refused(place, root, rc, output))


def test_without_confinement_a_token_in_the_environment_refuses_naming_the_fix() -> None:
    env = {"GH_TOKEN": CANARY, "ACTIONS_RUNTIME_TOKEN": "x" * 20, "MY_PASSWORD": "", "PATH": "/"}
    assert tokens_in(env) == ["ACTIONS_RUNTIME_TOKEN", "GH_TOKEN"]  # set, not empty
    message = refusal("unshare: Operation not permitted", tokens_in(env))
    assert "unshare: Operation not permitted" in message
    assert "env -u ACTIONS_RUNTIME_TOKEN -u GH_TOKEN artbot verify" in message
    assert CANARY not in message
    assert CannotConfine.exit_code == 2
    # In Actions, later steps get the runner's tokens: unconfined is refused there, token or not.
    actions = refusal("unshare: Operation not permitted", [], in_actions=True)
    assert "GitHub Actions job" in actions
    assert "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0" in actions


@pytest.mark.parametrize("token", [CANARY, None])
def test_where_confinement_fails_verify_refuses_while_a_token_is_set(
    place: Path, token: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No namespaces (not Linux, or user namespaces not allowed): with a token set nothing of
    the release runs (exit 2, saying why and what to do); without one it runs, saying so."""
    from click.testing import CliRunner

    from artbot.cli import cli

    monkeypatch.setattr("artbot.verify.apart.supported", lambda: "user namespaces are off")
    root = catalog(place)
    marker = place / "ran.txt"
    tree = place / "unpacked"
    (tree / "art").mkdir(parents=True)
    (tree / "art" / "__init__.py").write_text("")
    (tree / "art" / "loss.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    env = {"GH_TOKEN": token, "GITHUB_TOKEN": None, "ACTIONS_RUNTIME_TOKEN": None}
    env["GITHUB_ACTIONS"] = None
    args = ["--root", str(root), "verify", "code", "--art-src", str(tree)]
    result = CliRunner(env=env).invoke(cli, args)
    if token:
        assert result.exit_code == 2, result.output
        assert "cannot be confined here (user namespaces are off)" in result.output
        assert "env -u GH_TOKEN artbot verify" in result.output
        assert not marker.exists() and CANARY not in result.output
    else:
        assert marker.read_text() == "ran", result.output
        assert "runs unconfined (user namespaces are off); no token is set" in result.output


def test_where_namespaces_are_not_allowed_verify_refuses_before_running_anything(
    place: Path,
) -> None:
    """The refusal for real: verify started where no user namespace may be created (a user
    namespace whose limit of nested ones is 0), with GH_TOKEN set."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("needs unshare (util-linux) to make a place without user namespaces")
    root = catalog(place)
    marker = place / "ran.txt"
    tree = place / "unpacked"
    (tree / "art").mkdir(parents=True)
    (tree / "art" / "__init__.py").write_text("")
    (tree / "art" / "loss.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    no_userns = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
    probe = subprocess.run(
        [unshare, "--user", "--map-root-user", "sh", "-c", no_userns, "sh", "true"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    if probe.returncode != 0:
        pytest.skip(f"cannot make a place without user namespaces here: {probe.stderr[-200:]}")
    command = [sys.executable, "-m", "artbot", "--root", str(root), "verify", "code"]
    command += ["--art-src", str(tree)]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO)}
    env["GH_TOKEN"] = CANARY
    proc = subprocess.run(
        [unshare, "--user", "--map-root-user", "sh", "-c", no_userns, "sh", *command],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "ART's code cannot be confined here (unshare" in proc.stderr
    assert "env -u GH_TOKEN artbot verify" in proc.stderr
    assert not marker.exists() and CANARY not in proc.stdout + proc.stderr


def test_the_confined_view_shows_artbots_own_package_and_no_git_or_home(tmp_path: Path) -> None:
    """An editable install finds artbot through an import hook, not ``sys.path``: its package
    must be shown wherever it is, or ``python -m artbot.verify.apart`` cannot start (seen on a
    fresh clone under /tmp). Of a checkout only ART's packages are shown, never its ``.git``;
    of the records only what the check loads; no home folder, no wheel cache."""
    from types import SimpleNamespace

    import artbot
    from artbot.verify.apart import _view

    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)
    (checkout / "src" / "art").mkdir(parents=True)
    (checkout / "src" / "art_inference").mkdir()
    (tmp_path / "catalog" / "repros").mkdir(parents=True)
    (tmp_path / "catalog" / ".git").mkdir()
    catalog = SimpleNamespace(root=tmp_path / "catalog")
    tree = SimpleNamespace(package_dir=checkout / "src" / "art", packages=("art", "art_inference"))
    spec = _view(catalog, tree, str(tmp_path / "scratch"))  # type: ignore[arg-type]
    package = str(Path(artbot.__file__).resolve().parent)
    assert package in spec.keep
    assert str(checkout / "src" / "art") in spec.keep
    assert str(checkout / "src" / "art_inference") in spec.keep
    assert str(tmp_path / "catalog" / "repros") in spec.keep
    for path in spec.keep:
        assert ".git" not in Path(path).parts, path
        assert not Path(path).is_relative_to(tmp_path / "catalog" / ".git")
        assert path not in (str(checkout), str(tmp_path / "catalog"), str(Path.home()))
        assert "wheels" not in Path(path).parts
