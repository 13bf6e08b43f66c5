"""Run a finding's reproduction script and keep what it printed, with provenance.

Each run happens in a subprocess with a timeout. The result is stored as JSON in
``findings/results/NN.json`` so that ``artbot render`` can put the captured output into the
issue. Only a run that exited 0 and printed a verdict counts as evidence (status ``ok``) and
is saved; a timeout or crash is reported and leaves the capture on file as it was, so a bad run
never makes a capture worse.
"""

from __future__ import annotations

import json
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..settings import Settings, without_tokens

DEFAULT_TIMEOUT_S = 60.0
_VERDICT_RE = re.compile(
    r"^verdict: (reproduced|not reproduced|partial|fixed|not checked)\s*$", re.MULTILINE
)
# One line per claim, printed before the verdict: ``claim <id>: reproduced|fixed|not checked (why)``
_CLAIM_RE = re.compile(
    r"^claim ([a-z0-9]+(?:-[a-z0-9]+)*): (reproduced|fixed|not checked(?: \([^\n]*\))?)\s*$",
    re.MULTILINE,
)
_MAX_CAPTURE = 20_000  # characters kept of stdout/stderr each; issue bodies are capped at 65,536


@dataclass(frozen=True)
class ReproResult:
    item: int
    script: str
    command: str
    status: str  # ok | failed | timeout
    exit_code: int | None
    verdict: str | None
    duration_s: float
    stdout: str
    stderr: str
    python: str
    torch: str | None
    platform: str
    finished_at: str
    claims: dict[str, str] = field(
        default_factory=dict
    )  # claim id -> reproduced|fixed|not checked (why)

    def summary(self) -> str:
        if self.status == "timeout":
            return f"timed out after {self.duration_s:.1f} s"
        if self.status == "failed":
            tail = self.stderr.strip().splitlines()[-1:] or ["no output on stderr"]
            code = self.exit_code if self.exit_code is not None else "?"
            return f"crashed (exit {code}): {tail[0]}"
        return f"{self.verdict} in {self.duration_s:.1f} s"


def torch_version(python: str = sys.executable) -> str | None:
    """The torch version the scripts will see, without importing torch here: the installed
    distribution's metadata for artbot's own interpreter; another interpreter is asked."""
    if python == sys.executable:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("torch")
        except PackageNotFoundError:
            return None
    try:
        out = subprocess.run(
            [python, "-c", "import torch; print(torch.__version__)"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


# How a script is started: (argv, cwd, env, timeout_s) -> the finished process; raises
# subprocess.TimeoutExpired when the timeout passes. subprocess.run by default; the tests pass
# a runner that forks each script from an interpreter that has imported torch once.
Spawn = Callable[[list[str], Path, dict[str, str], float], "subprocess.CompletedProcess[str]"]


def _spawn(
    argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=timeout_s, env=env, check=False
    )


def run_repro(
    root: Path,
    item: int,
    script: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    python: str = sys.executable,
    torch: str | None = None,
    env: Mapping[str, str] | None = None,
    spawn: Spawn = _spawn,
) -> ReproResult:
    """Run ``root/script`` in a subprocess and capture what it printed.

    ``env``: the run's environment without tokens (:attr:`Settings.child_env`, the default).
    """
    command = f"python {script}"
    # Never hand a token to a script that doesn't need one.
    base = Settings().child_env if env is None else without_tokens(env)
    env = {**base, "PYTHONHASHSEED": "0"}
    started = time.monotonic()
    try:
        proc = spawn([python, script], root, env, timeout_s)
        stdout, stderr, code = proc.stdout, proc.stderr, proc.returncode
        status = "ok" if code == 0 else "failed"
    except subprocess.TimeoutExpired as exc:
        stdout, stderr, code, status = _text(exc.stdout), _text(exc.stderr), None, "timeout"
    duration = time.monotonic() - started
    verdicts = _VERDICT_RE.findall(stdout)
    verdict = verdicts[-1] if verdicts else None
    if status == "ok" and verdict is None:
        status = "failed"
        stderr += "\nartbot: the script printed no 'verdict:' line"
    return ReproResult(
        item=item,
        script=script,
        command=command,
        status=status,
        exit_code=code,
        verdict=verdict,
        duration_s=round(duration, 2),
        stdout=stdout[-_MAX_CAPTURE:],
        stderr=stderr[-_MAX_CAPTURE:],
        python=platform.python_version(),
        torch=torch,
        platform=platform.platform(terse=True),
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
        claims=parse_claims(stdout),
    )


def parse_claims(stdout: str) -> dict[str, str]:
    """The per-claim verdicts a script printed (the last line for a claim wins)."""
    return {cid: verdict for cid, verdict in _CLAIM_RE.findall(stdout)}


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


def results_path(root: Path, item: int) -> Path:
    return root / "findings" / "results" / f"{item:02d}.json"


def save_result(root: Path, result: ReproResult) -> Path:
    path = results_path(root, result.item)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(result), indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)  # atomic: a crash never leaves half a result behind
    return path


def load_result(root: Path, item: int) -> dict[str, Any] | None:
    """The stored result for ``item``, or None."""
    path = results_path(root, item)
    if not path.is_file():
        return None
    from ..errors import BadInput
    from ..jsonlimits import loads_limited

    try:
        data = loads_limited(path.read_bytes().decode("utf-8"))
    except ValueError as exc:  # UnicodeDecodeError and JsonTooLarge included
        raise BadInput(f"{path}: not a captured result ({exc}); run `artbot repro` again") from None
    if not isinstance(data, dict):
        raise BadInput(f"{path}: not a captured result (not an object)")
    return data


def kept_capture(root: Path, item: int) -> str:
    """What a failed run left on file, in words: the previous capture is kept as it was."""
    old = load_result(root, item)
    if not old or old.get("status") != "ok":
        return f"no capture on file ({results_path(root, item).relative_to(root)}); nothing saved"
    when = old.get("finished_at") or "an earlier run"
    return f"kept the previous capture ({old.get('verdict')}, from {when}); nothing saved"
