"""Run the code checks in a confined child process that holds no token: a wheel is untrusted.

:func:`verify_code` (in :mod:`.rejudge`) imports ART's modules, i.e. code downloaded from a package
registry. It never runs in artbot's own process: :func:`verify_code_apart` starts
``python -m artbot.verify.apart`` with an environment built from an allowlist (no
``GH_TOKEN``/``GITHUB_TOKEN``, no ``GITHUB_*``, ``INPUT_*`` or ``ARTBOT_*`` variable, nothing
whose name looks like a secret, nothing whose value holds a token), in a scratch working
directory, and reads back one JSON document over a pipe the child inherits (never a file
artbot's process opens by name; at most the cap + 1 bytes: :class:`.limits.ResultPipe`).

A clean environment is not enough (another process of the user can read the token), so the
child runs confined (:mod:`.confine`) and capped (:mod:`.limits`), and artbot's own process is
made non-dumpable first. Where a protection is missing, the check runs only while no token is
in the environment (and not in a GitHub Actions job), unconfined but capped; with one, it
refuses (:class:`CannotConfine`, exit 2) before anything runs and says how to fix it. Either
way ``verify`` says which protections it had.

What comes back is untrusted too: the wheel's code runs in the child, so it can write that file
and rewrite any text of the check's. It is parsed with size and depth limits and validated field
by field into :class:`CodeResult` objects (:mod:`.results`, which checks every cited line
again against the release) (unknown items dropped, missing ones "could not
run"); every text in it goes through one sanitizer (:mod:`.sanitize`: capped, one line, refused
when it looks like a credential). The child's stdout and stderr are read in chunks, counted and
dropped, never kept, echoed or recorded: a check that fails says so from how it ended (the cap
it ran into, named; its exit status or signal).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from ..errors import BadInput
from ..jsonlimits import JsonTooLarge, loads_limited
from ..records.catalog import Catalog
from ..report.output import flatten
from ..settings import SECRET_NAME_WORDS, TOKEN_VARIABLES, environment
from . import zygote
from .code import CodeResult, CodeStatus, checkable
from .confine import UNAVAILABLE, Spec, supported
from .confine import command as confine_command
from .limits import Finished, Limits, ResultPipe, apply, hit, run_bounded
from .limits import named as limits_named
from .rejudge import Plan, draw
from .results import parse_results
from .tree import ArtTree

# Variables the child may have: locale, paths, and the knobs torch and BLAS read.
SAFE_NAMES = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR", "TEMP",
        "TMP", "SYSTEMROOT", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHASHSEED", "PYTHONUTF8",
        "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE",
    }
)  # fmt: skip
SAFE_PREFIXES = ("LC_", "OMP_", "MKL_", "KMP_", "OPENBLAS_", "ATEN_", "TORCH_", "CUBLAS_")
# Never passed, whatever the prefix: names that look like credentials.
SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "AUTH", "CREDENTIAL", "COOKIE")
TIMEOUT_S = 600.0
MAX_RESULT_BYTES = 16 * 1024 * 1024


def child_env(env: Mapping[str, str], secrets: Sequence[str] = ()) -> dict[str, str]:
    """The child's environment: ``env`` through the allowlist, minus anything holding a secret."""
    plausible = [s.strip() for s in secrets if len(s.strip()) >= 8]
    out = {}
    for name, value in env.items():
        upper = name.upper()
        if upper not in SAFE_NAMES and not upper.startswith(SAFE_PREFIXES):
            continue
        if any(word in upper for word in SECRET_WORDS):
            continue
        if any(s in value for s in plausible):
            continue
        out[name] = value
    out.setdefault("PYTHONIOENCODING", "utf-8")
    return out


class CannotConfine(BadInput):
    """ART's code cannot be confined here and a token is in the environment: nothing runs."""


# Variables that hold a credential whatever artbot's settings say (GitHub Actions' own).
_RUNNER_TOKENS = ("ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN")


def tokens_in(env: Mapping[str, str]) -> list[str]:
    """Names of the variables in ``env`` that hold a token (set and not empty)."""
    return sorted(
        name
        for name, value in env.items()
        if value.strip()
        and (
            name in (*TOKEN_VARIABLES, *_RUNNER_TOKENS)
            or any(word in name.upper() for word in SECRET_NAME_WORDS)
        )
    )


ACTIONS_REFUSAL = (
    "ART's code cannot be confined here ({why}), and this is a GitHub Actions job: "
    "its later steps get the runner's tokens, which code left running could read. Allow user "
    "namespaces first (on ubuntu-24.04: sudo sysctl -w "
    "kernel.apparmor_restrict_unprivileged_userns=0), as this repository's sync.yml does"
)


def refusal(why: str, tokens: Sequence[str], in_actions: bool = False) -> str:
    """What ``verify`` says when it will not run ART's code: why, and the ways out."""
    if not tokens and in_actions:
        return ACTIONS_REFUSAL.format(why=why)
    names = ", ".join(tokens)
    unset = " ".join(f"-u {n}" for n in tokens)
    return (
        f"ART's code cannot be confined here ({why}), and {names} is set: the "
        "release's code could read it from any process of yours (/proc/PID/environ). "
        f"Run verify without it (env {unset} artbot verify ...), in a shell that never held "
        "it, or where user namespaces are allowed"
    )


CONFINED = (
    "confined: own user, PID, mount and network namespaces; no other process visible; "
    "a read-only view of the tree, artbot's package and Python only, and its scratch folder; "
    "no capabilities; no new namespace, mount, setns, bpf, keyctl, ptrace, io_uring or "
    "memfd_create (seccomp)"
)
GIT = "git reads only the checkout's objects (none of its config, refs or hooks)"


def verify_code_apart(
    catalog: Catalog,
    tree: ArtTree,
    *,
    env: Mapping[str, str] | None = None,
    secrets: Sequence[str] = (),
    timeout_s: float = TIMEOUT_S,
    limits: Limits | None = None,
    say: Callable[[str], None] | None = None,
    items: Iterable[int] | None = None,
    seed: int | None = None,
) -> list[CodeResult]:
    """:func:`verify_code` run apart, as the module says; ``say`` hears which protections it
    had, ``items`` limits the run to those findings' checks, ``seed`` draws the inputs (else
    a secret one). Raises :class:`CannotConfine` (nothing run) when a protection is missing
    and a token is in the environment."""
    only = None if items is None else set(items)
    findings = [f for f in checkable(catalog) if only is None or f.item in only]
    wanted = {f.item: {c.id for c in f.claims} for f in findings}
    if not wanted:
        return []
    # artbot draws the inputs here, with a seed the child never sees, and judges what it
    # measured on them here too (.rejudge): the child's verdicts decide nothing.
    plan = draw(catalog, findings, seed)
    results = _apart(catalog, tree, wanted, plan, env, secrets, timeout_s, limits, say)
    return [plan.judge(r) for r in results]


def _apart(
    catalog: Catalog,
    tree: ArtTree,
    wanted: dict[int, set[str]],
    plan: Plan,
    env: Mapping[str, str] | None,
    secrets: Sequence[str],
    timeout_s: float,
    limits: Limits | None,
    say: Callable[[str], None] | None,
) -> list[CodeResult]:
    """The checks run in the child, on ``plan``'s inputs: their results, as the child says."""
    say = say or (lambda _: None)
    limits = limits or Limits()
    base = environment() if env is None else dict(env)
    # The parent's own tokens are secrets even when the caller named none.
    secrets = tuple(s for s in (*secrets, *(base.get(k, "") for k in TOKEN_VARIABLES)) if s)
    dumpable_off = not_dumpable()
    tokens = tokens_in(base)
    in_actions = base.get("GITHUB_ACTIONS") == "true"
    strict = bool(tokens or in_actions)  # every protection, or nothing runs
    if strict and not dumpable_off and sys.platform.startswith("linux"):
        raise CannotConfine(refusal(NOT_DUMPABLE, tokens, in_actions))
    results = ResultPipe(MAX_RESULT_BYTES)
    with tempfile.TemporaryDirectory(prefix="artbot-verify-") as scratch, _closing(results):
        spec: dict[str, Any] = {"root": str(Path(catalog.root).resolve())}
        spec |= {"tree": _tree_json(tree), "items": sorted(wanted), "plan": plan.wire()}
        spec["out_fd"] = results.fd
        child = [sys.executable, "-m", "artbot.verify.apart"]
        cenv = child_env(base, secrets)
        run = _Run(json.dumps(spec), timeout_s, scratch, limits, results.fd)
        view = _view(catalog, tree, scratch)
        view = replace(view, require_process_cap=strict)
        failed = run.confined(child, {**cenv, "HOME": scratch, "TMPDIR": scratch}, view)
        if failed is not None and strict:
            raise CannotConfine(refusal(failed, tokens, in_actions))
        if failed is not None:
            caps = limits.words().replace(f", {limits.processes} processes", "")
            say(f"verify: ART's code runs unconfined ({failed}); no token is set; capped: {caps}")
            run.plain(child, cenv)
        else:
            say(f"verify: ART's code ran {protections(run, limits, dumpable_off)}")
        # Over the pipe it inherited, never from a file (which it could make a link to one
        # of artbot's): at most the cap + 1 bytes.
        raw = results.close()
        why = run.failure(limits)
        if why is not None or not raw:
            return _all_failed(wanted, tree, why or "the check process wrote no results")
    try:
        data = loads_limited(raw, max_bytes=MAX_RESULT_BYTES)
        return parse_results(data, wanted, tree, secrets)
    except (JsonTooLarge, ValueError, TypeError, KeyError) as exc:
        why = f"the check process wrote no valid results ({type(exc).__name__})"
        return _all_failed(wanted, tree, why)


@contextlib.contextmanager
def _closing(results: ResultPipe) -> Iterator[None]:
    try:
        yield
    finally:
        results.close(wait_s=0)


NOT_DUMPABLE = "artbot's process could not be made non-dumpable (prctl PR_SET_DUMPABLE)"


def protections(run: _Run, limits: Limits, dumpable_off: bool) -> str:
    """The protections the confined check had, in words."""
    caps = limits.words()
    if run.processes:
        caps = caps.replace(f"{limits.processes} processes", f"processes ({run.processes})")
    else:
        caps = caps.replace(f", {limits.processes} processes", "")
    dump = "artbot's process non-dumpable" if dumpable_off else "artbot's process dumpable"
    return f"{CONFINED}; capped: {caps}; {dump}; {GIT}"


class _Run:
    """The check process, confined or not, its output counted but never kept or shown."""

    def __init__(self, spec: str, timeout_s: float, cwd: str, limits: Limits, results_fd: int = -1):
        self.spec, self.timeout_s, self.cwd, self.limits = spec, timeout_s, cwd, limits
        self.results_fd = results_fd  # the pipe the check hands its results back on
        self.results_fds = (results_fd,) if results_fd >= 0 else ()
        self.finished: Finished | None = None
        self.ended: dict[str, Any] = {}  # how the confined process ended, from the confiner
        self.processes: str | None = None  # what caps its processes, when confined

    def plain(self, argv: list[str], env: dict[str, str]) -> None:
        limits = self.limits
        self.finished = run_bounded(
            argv, stdin=self.spec.encode(), env=env, cwd=self.cwd, timeout_s=self.timeout_s,
            preexec_fn=lambda: apply(limits, processes=False), pass_fds=self.results_fds,
        )  # fmt: skip

    def confined(self, argv: list[str], env: dict[str, str], view: Spec) -> str | None:
        """Run ``argv`` confined: None, or why the confinement could not be set up (and then
        nothing ran: only the confining process can write the report)."""
        why = supported()
        if why:
            return why
        read, write = os.pipe()
        try:
            spec = replace(view, report_fd=write, limits=self.limits.to_dict())
            check = zygote.Check(
                argv, self.spec.encode(), env, self.cwd, self.timeout_s, self.results_fd
            )
            finished = zygote.run(spec, check) or run_bounded(
                confine_command(spec, argv), stdin=self.spec.encode(), env=env, cwd=self.cwd,
                timeout_s=self.timeout_s, pass_fds=(write, *self.results_fds),
            )  # fmt: skip
            os.close(write)
            write = -1
            reports = _reports(read)
        finally:
            os.close(read)
            if write >= 0:
                os.close(write)
        if "failed" in reports and "ready" not in reports:
            return flatten(str(reports["failed"]))[:300]
        if finished.returncode == UNAVAILABLE and "ready" not in reports and not finished.timed_out:
            return "the confining process ended before it was set up"
        ready = reports.get("ready")
        self.processes = ready.get("processes") if isinstance(ready, dict) else None
        self.ended = reports
        self.finished = finished
        return None

    def failure(self, limits: Limits) -> str | None:
        """Why the check process did not finish as it should (None: it did), from how it
        ended: the wall clock, a cap (named), or its exit status. Never its output."""
        done = self.finished
        if done is None:
            return "the check process did not start"
        dropped = done.stdout.total + done.stderr.total
        printed = f"; it printed {dropped} bytes, not shown" if dropped else ""
        if done.timed_out:
            return f"the check process ran over {self.timeout_s:.0f} s (the wall clock){printed}"
        code: int | None = done.returncode
        signum: int | None = None
        if "failed" in self.ended:
            return f"the check process could not start: {flatten(str(self.ended['failed']))[:300]}"
        if self.ended:
            code = self.ended.get("exit") if isinstance(self.ended.get("exit"), int) else None
            signum = self.ended.get("signal") if isinstance(self.ended.get("signal"), int) else None
        elif code is not None and code < 0:
            signum = -code
            code = None
        cpu = self.ended.get("cpu_s")
        named = limits_named(limits, code, signum, cpu if isinstance(cpu, float) else None)
        if named:
            return named + printed
        if signum:
            return f"the check process was killed by signal {signum}{printed}"
        if code != 0:
            return f"the check process exited with {code}{printed}"
        return None


def _reports(fd: int) -> dict[str, Any]:
    """The confiner's JSON lines on the report pipe (64 KB at most), by key."""
    data = b""
    while len(data) < 65536 and (chunk := os.read(fd, 65536)):
        data += chunk
    found: dict[str, Any] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if isinstance(entry, dict):
                found.update(entry)
    return found


def _view(catalog: Catalog, tree: ArtTree, scratch: str) -> Spec:
    """What the confined check sees, read-only: ART's packages from the tree (not the
    checkout's ``.git``), the records and repros the check loads, artbot's own package
    (wherever an editable install or ``PYTHONPATH`` finds it) and Python's installation;
    its scratch folder, writable. No home folder, no wheel cache, no checkout's ``.git``."""
    prefixes = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    python = {os.path.realpath(p) for p in prefixes}
    python.add(os.path.dirname(os.path.realpath(sys.executable)))
    for entry in sys.path:  # installed packages only: site-packages, or inside a prefix
        real = os.path.realpath(entry) if entry and os.path.isabs(entry) else ""
        installed = os.path.basename(real) in ("site-packages", "dist-packages")
        if real and os.path.exists(real) and (installed or any(_inside(real, p) for p in python)):
            python.add(real)
    root = Path(catalog.root).resolve()
    records = {str(root / name) for name in ("findings", "repros", "templates")}
    base = tree.package_dir.resolve().parent
    packages = {str(base / name) for name in {tree.package_dir.name, *tree.packages}}
    # An editable install maps artbot to its checkout through an import hook, not sys.path.
    artbot_package = str(Path(__file__).resolve().parents[1])
    keep = python | records | packages | {artbot_package, sys.executable, sys.prefix}
    return Spec(scratch, tuple(sorted(p for p in keep if os.path.exists(p))))


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def not_dumpable() -> bool:
    """PR_SET_DUMPABLE 0 on artbot's own process (it may hold the token): no other process
    of the user can read its memory or its /proc/PID/environ. True when it took (Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
        return int(libc.prctl(3, 0, 0, 0, 0)) == 0  # PR_GET_DUMPABLE
    except (OSError, AttributeError):
        return False


def _all_failed(wanted: Iterable[int], tree: ArtTree, why: str) -> list[CodeResult]:
    return [CodeResult(i, CodeStatus.could_not_run, tree.label, why) for i in wanted]


def _tree_json(tree: ArtTree) -> dict[str, Any]:
    data = asdict(tree)
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in data.items()}


def _tree_from_json(data: dict[str, Any]) -> ArtTree:
    return ArtTree(
        label=data["label"],
        package_dir=Path(data["package_dir"]),
        source_root=data["source_root"],
        git_dir=Path(data["git_dir"]) if data.get("git_dir") else None,
        commit=data.get("commit"),
        notes=tuple(data.get("notes", ())),
        packages=tuple(data.get("packages", ())),
        sha256=data.get("sha256"),
    )


def _child() -> int:
    """In the child: read the spec on stdin, run the checks, write the results file."""
    from ..records.catalog import load_catalog
    from .code import code_json, run_check

    spec = json.loads(sys.stdin.read())
    out = int(spec["out_fd"])
    tree = _tree_from_json(spec["tree"])
    # ART's code may print; its output is counted by the parent, never kept or shown.
    catalog = load_catalog(Path(spec["root"]))
    items = set(spec.get("items") or ())
    plan = spec.get("plan") or {}
    try:
        results = [
            run_check(catalog, tree, f, plan.get(str(f.item)))
            for f in checkable(catalog)
            if f.item in items
        ]
    except (MemoryError, OSError, RuntimeError) as exc:
        code = hit(exc)
        if code is None:
            raise
        os._exit(code)  # the cap, named by the parent from this exit code
    data = json.dumps(code_json(results, tree, tapes=True), ensure_ascii=True).encode()
    with os.fdopen(out, "wb") as pipe:  # the parent reads it as it comes
        pipe.write(data)
    return 0


if __name__ == "__main__":
    raise SystemExit(_child())
