"""Run the code checks in a confined child process that holds no token: a wheel is untrusted.

:func:`verify_code` (in :mod:`.code`) imports ART's modules, i.e. code downloaded from a package
registry. It never runs in artbot's own process: :func:`verify_code_apart` starts
``python -m artbot.verify.apart`` with an environment built from an allowlist (no
``GH_TOKEN``/``GITHUB_TOKEN``, no ``GITHUB_*``, ``INPUT_*`` or ``ARTBOT_*`` variable, nothing
whose name looks like a secret, nothing whose value holds a token), in a scratch working
directory, and reads back one JSON file.

A clean environment is not enough: any process can read the environment of every other process
of its user, the shell that holds the token included, and write wherever that user may. So the
child runs confined (:mod:`.confine`: its own user, PID, mount and network namespaces, a
read-only file system but its scratch folder, no capabilities), and artbot's own process is
made non-dumpable. Where confinement cannot be set up (not Linux, or user namespaces not
allowed), the check runs unconfined only while no token is in the environment; with one, it
refuses (:class:`CannotConfine`, exit 2) and says how to run it. Either way ``verify`` says
which isolation it got.

What comes back is untrusted text too: the wheel's code runs in the child, so it can write that
file. It is parsed with size and depth limits and validated field by field into
:class:`CodeResult` objects (unknown items dropped, missing ones "could not run"); the child's
stdout and stderr are never echoed, only a short, flattened tail in a "could not run" detail.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from ..errors import BadInput
from ..jsonlimits import JsonTooLarge, loads_limited
from ..records.catalog import Catalog
from ..report.output import flatten
from ..settings import SECRET_NAME_WORDS, TOKEN_VARIABLES, environment
from .code import CodeResult, CodeStatus, checkable
from .confine import UNAVAILABLE, Spec, supported
from .confine import command as confine_command
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
MAX_RESULT_BYTES = 4 * 1024 * 1024
MAX_TEXT = 4000  # longest detail kept from the child


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
    "read-only file system but its scratch folder; no capabilities"
)


def verify_code_apart(
    catalog: Catalog,
    tree: ArtTree,
    *,
    env: Mapping[str, str] | None = None,
    secrets: Sequence[str] = (),
    timeout_s: float = TIMEOUT_S,
    say: Callable[[str], None] | None = None,
    items: Iterable[int] | None = None,
) -> list[CodeResult]:
    """:func:`verify_code` run in a token-free child process, confined where Linux allows it
    (:mod:`.confine`); ``say`` hears which isolation it got. Results validated on return.

    Raises :class:`CannotConfine` (nothing run) when confinement fails and a token is in the
    environment. ``items`` limits the run to those findings' checks."""
    only = None if items is None else set(items)
    wanted = {
        f.item: {c.id for c in f.claims}
        for f in checkable(catalog)
        if only is None or f.item in only
    }
    if not wanted:
        return []
    say = say or (lambda _: None)
    base = environment() if env is None else dict(env)
    # The parent's own tokens are secrets even when the caller named none.
    secrets = (*secrets, *(base.get(k, "") for k in TOKEN_VARIABLES))
    if tokens_in(base):
        _not_dumpable()
    with tempfile.TemporaryDirectory(prefix="artbot-verify-") as scratch:
        out = Path(scratch) / "results.json"
        spec: dict[str, Any] = {"root": str(Path(catalog.root).resolve())}
        spec |= {"tree": _tree_json(tree), "items": sorted(wanted)}
        spec["out"] = str(out)
        child = [sys.executable, "-m", "artbot.verify.apart"]
        cenv = child_env(base, secrets)
        run = _Run(json.dumps(spec), timeout_s, scratch)
        try:
            view = _view(catalog, tree, base, scratch)
            failed = run.confined(child, {**cenv, "HOME": scratch, "TMPDIR": scratch}, view)
            if failed is None:
                say(f"verify: ART's code ran {CONFINED}")
            else:
                tokens = tokens_in(base)
                in_actions = base.get("GITHUB_ACTIONS") == "true"
                if tokens or in_actions:
                    raise CannotConfine(refusal(failed, tokens, in_actions))
                say(f"verify: ART's code runs unconfined ({failed}); no token is set")
                run.plain(child, cenv)
        except subprocess.TimeoutExpired:
            return _all_failed(wanted, tree, f"the check process ran over {timeout_s:.0f} s")
        try:
            raw = out.read_bytes() if out.is_file() else b""
        except OSError:
            raw = b""
        proc = run.proc
        if proc is None or proc.returncode != 0 or not raw:
            why = f"the check process exited with {proc.returncode if proc else None}"
            tail = flatten(proc.stderr or "")[-300:] if proc else ""
            return _all_failed(wanted, tree, f"{why}: {tail}" if tail else why)
    try:
        data = loads_limited(raw, max_bytes=MAX_RESULT_BYTES)
        return parse_results(data, wanted, tree)
    except (JsonTooLarge, ValueError, TypeError, KeyError) as exc:
        return _all_failed(wanted, tree, f"the check process wrote no valid results ({exc})")


class _Run:
    """The check process, confined or not; ``proc`` is the one that ran."""

    def __init__(self, spec: str, timeout_s: float, cwd: str):
        self.spec, self.timeout_s, self.cwd = spec, timeout_s, cwd
        self.proc: subprocess.CompletedProcess[str] | None = None

    def plain(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.run(
            argv, input=self.spec, capture_output=True, text=True, errors="replace", env=env,
            cwd=self.cwd, timeout=self.timeout_s, check=False,
        )  # fmt: skip

    def confined(self, argv: list[str], env: dict[str, str], view: Spec) -> str | None:
        """Run ``argv`` confined: None, or why the confinement could not be set up (and then
        nothing ran: only the confining process can write the report line)."""
        why = supported()
        if why:
            return why
        read, write = os.pipe()
        try:
            proc = subprocess.Popen(
                confine_command(replace(view, report_fd=write), argv), stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                env=env, cwd=self.cwd, pass_fds=(write,),
            )  # fmt: skip
            os.close(write)
            write = -1
            try:
                stdout, stderr = proc.communicate(self.spec, timeout=self.timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                raise
            reported = os.read(read, 4000).decode("utf-8", "replace")
        finally:
            os.close(read)
            if write >= 0:
                os.close(write)
        if proc.returncode == UNAVAILABLE and reported:
            return flatten(reported)[:300]
        self.proc = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
        return None


def _view(catalog: Catalog, tree: ArtTree, env: Mapping[str, str], scratch: str) -> Spec:
    """What the confined check sees: the project, Python and ART's tree, read-only; its
    scratch folder, writable; no home folder."""
    python = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    python.add(os.path.dirname(os.path.realpath(sys.executable)))
    paths = {p for p in sys.path if p and os.path.isabs(p) and os.path.exists(p)}
    # artbot's own package too: an editable install maps it to its checkout through an import
    # hook, not sys.path, and that checkout may sit under a folder the child sees emptied (/tmp).
    artbot_package = str(Path(__file__).resolve().parents[1])
    keep = {
        str(Path(catalog.root).resolve()),
        str(tree.package_dir.resolve().parent),
        artbot_package,
    }
    homes = {env.get("HOME", ""), os.path.expanduser("~")}
    return Spec(scratch, tuple(sorted(keep | python | paths)), tuple(sorted(h for h in homes if h)))


def _not_dumpable() -> None:
    """PR_SET_DUMPABLE 0 on artbot's own process (it may hold the token): no other process
    of the user can read its memory or its /proc/PID/environ. Linux only."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE


def inert(text: str) -> str:
    """Text from the child as it is recorded: one line, bounded, no mention (a word joiner
    after ``@``). It stays plain text; the renderer makes it inert markdown where it is shown
    (:func:`artbot.render.status_view.cell_text`: no link, image or HTML)."""
    return flatten(text)[:MAX_TEXT].replace("@", "@\u2060")


def _text(value: Any, name: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} is not text")
    return inert(value)


def _texts(value: Any, name: str) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > 200:
        raise TypeError(f"{name} is not a list of text")
    return tuple(str(_text(v, name)) for v in value)


def parse_results(data: Any, wanted: Mapping[int, set[str]], tree: ArtTree) -> list[CodeResult]:
    """The child's JSON as :class:`CodeResult` objects, one per ``wanted`` item (item ->
    its declared claim ids), in order; a result claiming other ids is "could not run"."""
    from ..status import ClaimResult

    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise TypeError("expected {'results': [...]}")
    got: dict[int, CodeResult] = {}
    for entry in data["results"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("item"), int):
            raise TypeError("a result without an item number")
        item = entry["item"]
        if item not in wanted or item in got:
            continue
        claims_raw = entry.get("claims") or {}
        if not isinstance(claims_raw, dict):
            raise TypeError(f"item {item}: claims is not an object")
        if not set(claims_raw) <= wanted[item]:
            raise TypeError(f"item {item}: claims the record does not declare")
        claims = {}
        for cid, claim in claims_raw.items():
            result = ClaimResult.model_validate(claim)
            claims[cid] = result.model_copy(update={"detail": inert(result.detail)})
        got[item] = CodeResult(
            item,
            CodeStatus(entry["status"]),
            tree.label,
            str(_text(entry.get("detail", ""), "detail")),
            claims=claims,
            ran=_texts(entry.get("ran", []), "ran"),
            scope=_text(entry.get("scope"), "scope", optional=True),
            stand_ins=_texts(entry.get("stand_ins", []), "stand_ins"),
            not_loaded=_texts(entry.get("not_loaded", []), "not_loaded"),
        )
    missing = "the check process reported no result for this item"
    return [
        got.get(i) or CodeResult(i, CodeStatus.could_not_run, tree.label, missing) for i in wanted
    ]


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
    out = Path(spec["out"])
    tree = _tree_from_json(spec["tree"])
    # ART's code may print; keep it off the parent's pipes' meaning (they are discarded).
    catalog = load_catalog(Path(spec["root"]))
    items = set(spec.get("items") or ())
    results = [run_check(catalog, tree, f) for f in checkable(catalog) if f.item in items]
    out.write_text(json.dumps(code_json(results, tree), ensure_ascii=True), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(_child())
