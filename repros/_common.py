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


def floored(value: float, floor: float) -> float | str:
    """``value``, or ``"< floor"`` when it is below ``floor`` (and not exactly 0).

    For figures at rounding level (an FP32 reference's error, ~1e-7) whose digits depend on the
    CPU's summation order: what is stable across machines is that they are below the floor.
    """
    if value == 0 or abs(value) >= floor:
        return value
    return f"< {floor:g}"


def _fmt(v: Any) -> str:
    # Three significant digits: BF16 kernels differ between CPUs in the last digits, and the
    # printed report is compared with a fresh run on whatever machine runs the tests.
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
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def run(build_report, argv: list[str] | None = None) -> int:
    """Entry point shared by the scripts: ``build_report()`` returns a :class:`Report`."""
    parser = argparse.ArgumentParser(description=(build_report.__doc__ or "").strip() or None)
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    args = parser.parse_args(argv)
    torch.set_num_threads(min(2, torch.get_num_threads()))
    report = build_report()
    if args.json:
        # Strict JSON: inf and NaN (real measurements here) become the strings "inf", "nan".
        json.dump(_finite(report.as_dict()), sys.stdout, indent=2, default=str, allow_nan=False)
        sys.stdout.write("\n")
    else:
        print(report.text())
    return 0
