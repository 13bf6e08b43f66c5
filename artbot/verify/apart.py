"""Run the code checks in a child process that holds no token: a downloaded wheel is untrusted.

:func:`verify_code` (in :mod:`.code`) imports ART's modules, i.e. code downloaded from a package
registry. It never runs in artbot's own process: :func:`verify_code_apart` starts
``python -m artbot.verify.apart`` with an environment built from an allowlist (no
``GH_TOKEN``/``GITHUB_TOKEN``, no ``GITHUB_*``, ``INPUT_*`` or ``ARTBOT_*`` variable other than
the wheel cache, nothing whose name looks like a secret, nothing whose value holds a token), in
a scratch working directory, and reads back one JSON file.

What comes back is untrusted text too: the wheel's code runs in the child, so it can write that
file. It is parsed with size and depth limits and validated field by field into
:class:`CodeResult` objects (unknown items dropped, missing ones "could not run"); the child's
stdout and stderr are never echoed, only a short, flattened tail in a "could not run" detail.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..catalog import Catalog
from ..jsonlimits import JsonTooLarge, loads_limited
from ..report.output import flatten
from ..settings import environment
from .code import CodeResult, CodeStatus, checkable
from .tree import ArtTree

# Variables the child may have: locale, paths, and the knobs torch and BLAS read.
SAFE_NAMES = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR", "TEMP",
        "TMP", "SYSTEMROOT", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHASHSEED", "PYTHONUTF8",
        "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE", "ARTBOT_CACHE_DIR",
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


def verify_code_apart(
    catalog: Catalog,
    tree: ArtTree,
    *,
    env: Mapping[str, str] | None = None,
    secrets: Sequence[str] = (),
    timeout_s: float = TIMEOUT_S,
) -> list[CodeResult]:
    """:func:`verify_code` run in a token-free child process; results validated on return."""
    wanted = {f.item: {c.id for c in f.claims} for f in checkable(catalog)}
    if not wanted:
        return []
    base = environment() if env is None else dict(env)
    # The parent's own tokens are secrets even when the caller named none.
    secrets = (*secrets, *(base.get(k, "") for k in ("GH_TOKEN", "GITHUB_TOKEN")))
    with tempfile.TemporaryDirectory(prefix="artbot-verify-") as scratch:
        out = Path(scratch) / "results.json"
        spec = {"root": str(Path(catalog.root).resolve()), "tree": _tree_json(tree)}
        spec["out"] = str(out)
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "artbot.verify.apart"],
                input=json.dumps(spec),
                capture_output=True,
                text=True,
                errors="replace",
                env=child_env(base, secrets),
                cwd=scratch,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return _all_failed(wanted, tree, f"the check process ran over {timeout_s:.0f} s")
        try:
            raw = out.read_bytes() if out.is_file() else b""
        except OSError:
            raw = b""
        if proc.returncode != 0 or not raw:
            why = f"the check process exited with {proc.returncode}"
            tail = flatten(proc.stderr or "")[-300:]
            return _all_failed(wanted, tree, f"{why}: {tail}" if tail else why)
    try:
        data = loads_limited(raw, max_bytes=MAX_RESULT_BYTES)
        return parse_results(data, wanted, tree)
    except (JsonTooLarge, ValueError, TypeError, KeyError) as exc:
        return _all_failed(wanted, tree, f"the check process wrote no valid results ({exc})")


def verify_release_apart(
    catalog: Catalog,
    version: str,
    secrets: Sequence[str],
    say: Callable[[str], None],
    cache: Path | None = None,
) -> tuple[str, list[CodeResult]]:
    """``sync --verify VERSION``: the release (``latest``: the newest, said with ``say``),
    fetched into ``cache`` (``Settings.wheel_cache``) and checked apart; (version, results)."""
    from .release import release_tree, resolve

    if version == "latest":
        version = resolve(version)
        say(f"verify: the newest openpipe-art release is {version}")
    tree = release_tree(version, catalog.audit, cache, progress=say)
    return version, verify_code_apart(catalog, tree, secrets=secrets)


def inert(text: str) -> str:
    """Text from the child as it is recorded: one line, bounded, no mention (a word joiner
    after ``@``). It stays plain text; the renderer makes it inert markdown where it is shown
    (:func:`artbot.status.view.cell_text`: no link, image or HTML)."""
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
    from ..catalog import load_catalog
    from .code import code_json, verify_code

    spec = json.loads(sys.stdin.read())
    out = Path(spec["out"])
    tree = _tree_from_json(spec["tree"])
    # ART's code may print; keep it off the parent's pipes' meaning (they are discarded).
    results = verify_code(load_catalog(Path(spec["root"])), tree)
    out.write_text(json.dumps(code_json(results, tree), ensure_ascii=True), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(_child())
