"""Each captured repro output in findings/results/ matches a fresh run of its script, on two
CPU kernels.

The captured text is what issue bodies quote, so a maintainer who runs the script must see the
same lines. Provenance (duration, timestamp, platform) may differ. The scripts print each
statistical estimate with its standard error at the digits that error supports, and
rounding-level figures as a bound; what may still differ between CPUs (AVX-512, AVX2, the
portable kernel) is a last digit, where a BF16 rounding goes the other way after a different
FP32 summation order. So:

- verdict and claim lines must be equal, character for character;
- every other line must have the same words and punctuation, and its numbers may differ by
  at most the tolerance below.

**Tolerance**: two printed numbers agree when they differ by at most one unit in the last
digit printed, of the coarser of the two (``0.00687`` against ``0.00686``; ``0.002`` against
``0.0019``, a standard error printed with one digit or two). A value printed with its standard
error (``0.002633 ± 0.000014``) may also differ by up to half that standard error: a CPU's
summation order must move a figure by much less than its statistical uncertainty.

Each script runs once per kernel: ``ATEN_CPU_CAPABILITY=default`` (torch's portable kernels)
and this machine's own (torch's CPU capability, set explicitly), and both must match the
capture and each other. Runs are shared by the tests through a per-process cache. Regenerate
a capture with ``artbot repro --item N``.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from artbot.repro.run import ReproResult, run_repro  # noqa: E402
from artbot.settings import Settings  # noqa: E402
from tests.helpers.forkrun import ForkServer  # noqa: E402

pytestmark = pytest.mark.repro

ROOT = Path(__file__).resolve().parents[2]
CAPTURED = sorted((ROOT / "findings" / "results").glob("*.json"))
_NATIVE = str(torch.backends.cpu.get_cpu_capability()).lower()
KERNELS = ["default"] + ([_NATIVE] if _NATIVE != "default" else [])
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_EXACT = re.compile(r"^(verdict|claim [a-z0-9-]+):")


def _unit(text: str) -> float:
    """One unit in the last digit printed: ``0.00687`` -> 1e-05, ``4.1e-09`` -> 1e-10."""
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def numbers_agree(a: str, b: str, stderr_a: float = 0.0, stderr_b: float = 0.0) -> bool:
    """Two printed numbers within the tolerance (module docstring); ``stderr_*`` the standard
    error printed beside each (0 when none)."""
    if a == b:
        return True
    x, y = float(a), float(b)
    if not (math.isfinite(x) and math.isfinite(y)):
        return False
    allowed = max(_unit(a), _unit(b), 0.5 * max(stderr_a, stderr_b))
    return abs(x - y) <= allowed * (1 + 1e-9)


def _standard_errors(line: str, numbers: list[str]) -> dict[int, float]:
    """Index of each number printed as ``value ± stderr`` -> its stderr (same scale)."""
    spans = [m.span() for m in _NUMBER.finditer(line)]
    return {
        i: abs(float(numbers[i + 1]))
        for i in range(len(spans) - 1)
        if line[spans[i][1] : spans[i + 1][0]] == " ± "
    }


def line_differences(expected: str, actual: str) -> list[str]:
    """Where ``actual`` differs from ``expected`` beyond the tolerance, line by line."""
    want, got = expected.splitlines(), actual.splitlines()
    if len(want) != len(got):
        return [f"{len(got)} lines where {len(want)} were expected"]
    out = []
    for number, (w, g) in enumerate(zip(want, got, strict=True), start=1):
        if w == g:
            continue
        if _EXACT.match(w) or _EXACT.match(g):
            out.append(f"line {number}: {g!r} where {w!r} (compared exactly)")
            continue
        words_w, words_g = _NUMBER.split(w), _NUMBER.split(g)
        nums_w, nums_g = _NUMBER.findall(w), _NUMBER.findall(g)
        if words_w != words_g or len(nums_w) != len(nums_g):
            out.append(f"line {number}: {g!r} where {w!r}")
            continue
        errors = _standard_errors(w, nums_w)
        off = [
            (x, y)
            for i, (x, y) in enumerate(zip(nums_w, nums_g, strict=True))
            if not numbers_agree(x, y, errors.get(i, 0.0), _standard_errors(g, nums_g).get(i, 0.0))
        ]
        if off:
            shown = ", ".join(f"{y} for {x}" for x, y in off)
            out.append(f"line {number}: {shown}, beyond the tolerance: {g!r}")
    return out


@contextmanager
def _kernel(name: str) -> Iterator[None]:
    """``ATEN_CPU_CAPABILITY=name`` for the scripts started inside (they copy os.environ)."""
    previous = os.environ.get("ATEN_CPU_CAPABILITY")
    os.environ["ATEN_CPU_CAPABILITY"] = name
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("ATEN_CPU_CAPABILITY", None)
        else:
            os.environ["ATEN_CPU_CAPABILITY"] = previous


_RUNS: dict[tuple[str, str], ReproResult] = {}
_SERVERS: dict[str, ForkServer] = {}


def fresh_run(path: Path, kernel: str) -> ReproResult:
    """The script of capture ``path`` run once under ``kernel``, shared by the tests: by
    ``artbot repro``'s own runner, each script forked from one interpreter per kernel that has
    imported torch (tests/helpers/forkrun.py; tests/project/test_forkrun.py shows it prints what a
    fresh ``python`` prints)."""
    key = (path.stem, kernel)
    if key not in _RUNS:
        captured = json.loads(path.read_text(encoding="utf-8"))
        with _kernel(kernel):
            if kernel not in _SERVERS:
                env = {**Settings().child_env, "PYTHONHASHSEED": "0"}
                _SERVERS[kernel] = ForkServer(env, preload=("torch", "torch._dynamo"))
                atexit.register(_SERVERS[kernel].close)
            _RUNS[key] = run_repro(
                ROOT,
                captured["item"],
                captured["script"],
                timeout_s=180,
                spawn=_SERVERS[kernel].spawn,
            )
    return _RUNS[key]


def test_every_item_has_a_captured_output() -> None:
    records = [*(ROOT / "findings").glob("[0-9][0-9]-*.yaml")]
    records += (ROOT / "findings").glob("followup-*.yaml")  # artbot's own follow-ups
    assert len(CAPTURED) == len(records)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("path", CAPTURED, ids=lambda p: p.stem)
def test_captured_output_matches_a_fresh_run(path: Path, kernel: str) -> None:
    captured = json.loads(path.read_text(encoding="utf-8"))
    fresh = fresh_run(path, kernel)
    assert fresh.status == "ok", fresh.stderr
    assert fresh.verdict == captured["verdict"]
    differences = line_differences(captured["stdout"], fresh.stdout)
    assert not differences, (
        f"{path.name} differs from a fresh run with ATEN_CPU_CAPABILITY={kernel}:\n"
        + "\n".join(differences)
        + f"\nIf the script's output changed on purpose, run `artbot repro --item "
        f"{captured['item']}`; if only a figure moved, print it at the precision it has."
    )


@pytest.mark.skipif(len(KERNELS) < 2, reason="this CPU has only torch's default kernels")
@pytest.mark.full  # every kernel: make test-all
@pytest.mark.parametrize("path", CAPTURED, ids=lambda p: p.stem)
def test_both_kernels_print_the_same_text(path: Path) -> None:
    first, second = (fresh_run(path, kernel) for kernel in KERNELS)
    assert first.status == second.status == "ok"
    assert not line_differences(first.stdout, second.stdout)


# The comparison itself ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "agree"),
    [
        ("0.00687", "0.00686", True),  # the AVX2 / AVX-512 flip of issue #19
        ("-0.000263", "-0.000262", True),
        ("0.002", "0.0019", True),  # a standard error printed with one or two digits
        ("0.00687", "0.00685", False),
        ("0.070", "0.072", False),
        ("4.1e-09", "4.2e-09", True),
        ("4.1e-09", "4.3e-09", False),
        ("1000", "1001", True),
        ("1000", "1004", False),
        ("84", "86", False),
        ("inf", "inf", True),
    ],
)
def test_numbers_agree_within_one_last_digit(a: str, b: str, agree: bool) -> None:
    assert numbers_agree(a, b) is agree
    assert numbers_agree(b, a) is agree


def test_a_value_with_a_standard_error_may_move_by_half_of_it() -> None:
    line = "  relative L2 error, 4 calls: 0.002633 ± 0.000014 | fixed: < 1e-06"
    assert line_differences(line, line.replace("0.002633", "0.002626")) == []
    assert line_differences(line, line.replace("0.002633", "0.002625"))
    scaled = "  bias: (6.9 ± 0.4)e-08"
    assert line_differences(scaled, scaled.replace("6.9", "7.1")) == []
    assert line_differences(scaled, scaled.replace("6.9", "7.2"))


def test_line_differences_compare_words_exactly_and_verdicts_exactly() -> None:
    text = "bias: 0.007 ± 0.004 nats\nclaim x-y: reproduced\nverdict: reproduced"
    assert line_differences(text, text.replace("0.007", "0.006")) == []
    assert line_differences(text, text.replace("0.007", "0.010"))
    assert line_differences(text, text.replace("nats", "bits"))
    assert line_differences(text, text.replace("verdict: reproduced", "verdict: fixed"))
    assert line_differences(text, text.replace("claim x-y: reproduced", "claim x-y: fixed"))
    assert line_differences(text, text + "\nnote: more")
