"""Shared pieces of the reproductions: BF16 rounding, float64 references, the report.

Every repro script imports this module from its own folder, so each one still runs
as ``python repros/<script>.py`` with only torch and numpy installed.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
from dataclasses import dataclass, field
from typing import Any

import torch


def seed_everything(seed: int = 0) -> torch.Generator:
    """Seed torch globally and return a generator for explicit draws."""
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def to_bf16(x: torch.Tensor) -> torch.Tensor:
    """Round to BF16 (round-to-nearest-even, like a BF16 GEMM output store), back to FP32."""
    return x.to(torch.bfloat16).to(torch.float32)


def bf16_spacing(x: float) -> float:
    """Distance between adjacent BF16 values around |x| (8 significant bits: 2**(e-7))."""
    if x == 0:
        return 2.0**-133
    return 2.0 ** (math.floor(math.log2(abs(x))) - 7)


def log_softmax64(logits: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Ground-truth log-softmax in float64.

    FP32 log_softmax over a 150k vocabulary on CPU loses the tail; float64 does not,
    so every comparison in these repros is made against this.
    """
    return torch.log_softmax(logits.to(torch.float64), dim=dim)


def quantiles(x: torch.Tensor, qs: tuple[float, ...] = (0.5, 0.9, 0.99)) -> dict[str, float]:
    """Named quantiles (p50, p90, ...) of a 1-D tensor, in float64."""
    x = x.detach().to(torch.float64).flatten()
    out = torch.quantile(x, torch.tensor(qs, dtype=torch.float64))
    return {f"p{round(q * 100):d}": float(v) for q, v in zip(qs, out, strict=True)}


@dataclass
class Measurement:
    name: str
    value: Any
    unit: str = ""
    audit: Any = None
    fixed: Any = None
    note: str = ""


@dataclass
class Report:
    """What a repro measured, printed for people or as one JSON object (``--json``)."""

    item: str
    title: str
    models: str
    setting: dict[str, Any] = field(default_factory=dict)
    measurements: list[Measurement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reproduced: bool | None = None
    claims: dict[str, str] = field(default_factory=dict)

    def claim(self, claim_id: str, reproduced: bool | None, why: str = "") -> None:
        """Record one claim's verdict: True reproduced, False fixed, None not checked (``why``)."""
        if reproduced is None:
            self.claims[claim_id] = f"not checked ({why or 'no check on this setup'})"
        else:
            self.claims[claim_id] = "reproduced" if reproduced else "fixed"

    def measure(
        self,
        name: str,
        value: Any,
        unit: str = "",
        *,
        audit: Any = None,
        fixed: Any = None,
        note: str = "",
    ) -> None:
        self.measurements.append(Measurement(name, value, unit, audit, fixed, note))

    def note(self, text: str) -> None:
        self.notes.append(text)

    def as_dict(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "title": self.title,
            "models": self.models,
            "setting": self.setting,
            "measurements": [m.__dict__ for m in self.measurements],
            "notes": self.notes,
            "environment": {
                "python": platform.python_version(),
                "torch": torch.__version__,
                "platform": platform.platform(),
            },
            "claims": self.claims,
            "verdict": self.verdict,
        }

    @property
    def verdict(self) -> str:
        if self.claims:
            return derive_verdict(list(self.claims.values()))
        return "reproduced" if self.reproduced else "not reproduced"

    def text(self) -> str:
        lines = [f"item {self.item}: {self.title}", f"models: {self.models}", "setting:"]
        lines += [f"  {k}: {_fmt(v)}" for k, v in self.setting.items()]
        lines.append("measured (as cited | with the suggested fix):")
        for m in self.measurements:
            unit = f" {m.unit}" if m.unit else ""
            row = f"  {m.name}: {_fmt(m.value)}{unit}"
            if m.fixed is not None:
                row += f" | fixed: {_fmt(m.fixed)}{unit}"
            if m.audit is not None:
                row += f" | audit: {m.audit}"
            if m.note:
                row += f"  ({m.note})"
            lines.append(row)
        lines += [f"note: {n}" for n in self.notes]
        lines += [f"claim {cid}: {v}" for cid, v in self.claims.items()]
        lines.append(f"verdict: {self.verdict}")
        return "\n".join(lines)


def derive_verdict(claims: list[str]) -> str:
    """A finding's verdict from its claims' (reproduced | fixed | not checked (why))."""
    checked = [c for c in claims if not c.startswith("not checked")]
    if not checked:
        return "not checked"
    hits = sum(c == "reproduced" for c in checked)
    return "reproduced" if hits == len(checked) else "partial" if hits else "fixed"


@dataclass(frozen=True)
class Estimate:
    """A statistical estimate: a value with its standard error, printed at the digits the
    error supports (``0.007 ± 0.004``): the error to one significant digit (two when it starts
    with 1), the value to the same decimal place. The figures kept in ``--json`` are the full
    floats; only the printed text is rounded."""

    value: float
    stderr: float

    def __str__(self) -> str:
        return format_estimate(self.value, self.stderr)


def format_estimate(value: float, stderr: float) -> str:
    """``value ± stderr`` at the precision ``stderr`` allows (see :class:`Estimate`)."""
    if stderr == 0:  # exact (every sample agrees): the value as it is
        return _fmt(float(value))
    if not (math.isfinite(value) and math.isfinite(stderr)) or stderr < 0:
        return f"{_fmt(float(value))} ± {_fmt(float(stderr))}"
    place = math.floor(math.log10(stderr))
    lead = stderr / 10.0**place  # in [1, 10)
    if lead >= 9.5:  # 0.096 prints as 0.10
        place, lead = place + 1, lead / 10.0
    if lead < 1.95:  # a leading 1 keeps a second digit: one digit of 0.0014 is a 40% error
        place -= 1
    err = round(stderr, -place)
    val = round(value, -place)
    if -6 <= place <= 0 and abs(val) < 1e6:
        decimals = max(0, -place)
        text_val, text_err = f"{val:.{decimals}f}", f"{err:.{decimals}f}"
        if text_val.lstrip("-").strip("0.") == "":
            text_val = "0" if decimals == 0 else f"{0:.{decimals}f}"
        return f"{text_val} ± {text_err}"
    # Far from 1: a shared power of ten, (6.9 ± 0.4)e-08.
    exponent = math.floor(math.log10(max(abs(val), err)))
    digits = max(0, exponent - place)
    scale = 10.0**exponent
    return f"({val / scale:.{digits}f} ± {err / scale:.{digits}f})e{exponent:+03d}"


def mean_estimate(x: torch.Tensor) -> Estimate:
    """Mean of the samples in ``x`` with its standard error (std / sqrt(n))."""
    x = x.detach().to(torch.float64).flatten()
    return Estimate(float(x.mean()), float(x.std() / math.sqrt(x.numel())))


def quantile_estimate(x: torch.Tensor, q: float) -> Estimate:
    """Sample quantile with a distribution-free standard error.

    The number of samples below the true q-quantile is Binomial(n, q), so the order statistics
    at ranks n*q -+ sqrt(n q (1 - q)) bracket it with about 68% probability; half their distance
    is the standard error.
    """
    x = x.detach().to(torch.float64).flatten().sort().values
    n = x.numel()
    value = float(torch.quantile(x, q))
    spread = math.sqrt(n * q * (1.0 - q))
    lo = min(max(math.floor(n * q - spread), 0), n - 1)
    hi = min(max(math.ceil(n * q + spread), 0), n - 1)
    return Estimate(value, (float(x[hi]) - float(x[lo])) / 2.0)


def ratio_estimate(num: torch.Tensor, den: torch.Tensor) -> Estimate:
    """sum(num) / sum(den) over samples taken as independent, with its delta-method standard
    error sqrt(sum((num_i - R den_i)**2)) / sum(den)."""
    num, den = num.detach().double().flatten(), den.detach().double().flatten()
    total = float(den.sum())
    ratio = float(num.sum()) / total
    return Estimate(ratio, float((num - ratio * den).square().sum().sqrt()) / abs(total))


def jackknife(parts: torch.Tensor, statistic) -> Estimate:  # type: ignore[no-untyped-def]
    """``statistic(parts.sum(0))`` with its delete-one jackknife standard error.

    ``parts`` is [n, k]: each row one sample's additive contributions to k sums (per-token
    squared norms, say); ``statistic`` maps the k sums (float64) to the figure.
    """
    parts = parts.detach().to(torch.float64)
    n = parts.shape[0]
    total = parts.sum(dim=0)
    value = float(statistic(total))
    leave_one_out = torch.tensor(
        [float(statistic(total - row)) for row in parts], dtype=torch.float64
    )
    se = math.sqrt((n - 1) / n * float((leave_one_out - leave_one_out.mean()).square().sum()))
    return Estimate(value, se)


def upper_bound(value: float) -> str:
    """``≤ x``, x ``value`` rounded up to one significant digit: a bound printed as a bound."""
    if value <= 0:
        return "0"
    place = math.floor(math.log10(value))
    up = math.ceil(value / 10.0**place - 1e-9) * 10.0**place
    return f"≤ {up:.{max(0, -place)}f}" if place >= -4 else f"≤ {up:.0e}"


def floored(value: float, floor: float, *, keep_zero: bool = True) -> float | str:
    """``value``, or ``"< floor"`` when it is below ``floor`` (and, with ``keep_zero``, not
    exactly 0).

    For figures at rounding level (an FP32 reference's error, ~1e-7) whose digits depend on the
    CPU's summation order: what is stable across machines is that they are below the floor.
    ``keep_zero=False`` where even an exact 0 depends on the CPU (a sum that cancels exactly
    on one kernel and leaves an ulp on another).
    """
    if abs(value) >= floor or (value == 0 and keep_zero):
        return value
    return f"< {floor:g}"


def _fmt(v: Any) -> str:
    # Three significant digits: BF16 kernels differ between CPUs in the last digits, and the
    # printed report is compared with a fresh run on whatever machine runs the tests.
    if isinstance(v, Estimate):
        return str(v)
    if isinstance(v, float):
        if v == 0:
            return "0"
        if math.isinf(v) or math.isnan(v):
            return str(v)
        return f"{v:.3g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_fmt(x)}" for k, x in v.items()) + "}"
    return str(v)


def _finite(value: Any) -> Any:
    if isinstance(value, Estimate):
        return {"value": _finite(value.value), "stderr": _finite(value.stderr)}
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def run(build_report, argv: list[str] | None = None, *, threads: int = 1) -> int:
    """Entry point shared by the scripts: ``build_report()`` returns a :class:`Report`.

    ``threads``: torch's intra-op threads, at most 2. One by default: these scripts are many
    small ops, which run up to twice as fast on one thread as on two that wait on each other
    on a busy 2-core machine (item 1: 10.7 s -> 5.2 s; item 5: 5x)."""
    parser = argparse.ArgumentParser(description=(build_report.__doc__ or "").strip() or None)
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    args = parser.parse_args(argv)
    torch.set_num_threads(min(threads, 2, torch.get_num_threads()))
    report = build_report()
    if args.json:
        # Strict JSON: inf and NaN (real measurements here) become the strings "inf", "nan".
        json.dump(_finite(report.as_dict()), sys.stdout, indent=2, default=str, allow_nan=False)
        sys.stdout.write("\n")
    else:
        print(report.text())
    return 0
