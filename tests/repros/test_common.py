"""repros/_common.py's estimates: a figure printed at the precision its standard error gives."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from artbot.repro.scripts import import_script

pytestmark = pytest.mark.repro

torch = pytest.importorskip("torch")
REPROS = Path(__file__).resolve().parents[2] / "repros"
common = import_script(REPROS / "_common.py", "repros_common_under_test")


@pytest.mark.parametrize(
    ("value", "stderr", "text"),
    [
        (0.00687, 0.0041, "0.007 ± 0.004"),  # issue #19's example
        (0.0699, 0.0061, "0.070 ± 0.006"),
        (-0.000263, 0.00001, "-0.000263 ± 0.000010"),  # a leading 1 keeps two digits
        (0.5, 0.096, "0.50 ± 0.10"),  # the error rounds up to the next decade
        (12.3, 1.4, "12.3 ± 1.4"),
        (1234.5, 96, "(1.23 ± 0.10)e+03"),
        (6.9e-8, 4e-9, "(6.9 ± 0.4)e-08"),
        (-0.0000004, 0.002, "0.000 ± 0.002"),  # no "-0.000"
        (1.0, 0.0, "1"),  # exact: the value as it is
    ],
)
def test_format_estimate(value: float, stderr: float, text: str) -> None:
    assert common.format_estimate(value, stderr) == text


_PAIR = re.compile(r"^\(?(-?[\d.]+) ± ([\d.]+)\)?(?:e([-+]\d+))?$")


@given(
    value=st.floats(-1e6, 1e6, allow_nan=False),
    stderr=st.floats(1e-9, 1e5, allow_nan=False),
)
def test_printed_value_is_the_value_rounded_at_the_errors_digits(
    value: float, stderr: float
) -> None:
    found = _PAIR.match(common.format_estimate(value, stderr))
    assert found, common.format_estimate(value, stderr)
    scale = 10.0 ** int(found.group(3) or 0)
    printed_value, printed_error = float(found.group(1)) * scale, float(found.group(2)) * scale
    decimals = len(found.group(2).partition(".")[2])
    unit = 10.0**-decimals * scale
    # The value is rounded to the error's last digit, and the error to 1-2 significant digits.
    assert abs(printed_value - value) <= 0.5 * unit * (1 + 1e-6) + 1e-12 * abs(value)
    assert 0.5 * stderr <= printed_error <= 1.6 * stderr


def test_quantile_estimate_matches_the_binomial_standard_error() -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(20_000, generator=gen, dtype=torch.float64)
    est = common.quantile_estimate(x, 0.9)
    # Uniform(0, 1): density 1, so the q-quantile's standard error is sqrt(q (1 - q) / n).
    assert est.value == pytest.approx(0.9, abs=0.01)
    assert est.stderr == pytest.approx(math.sqrt(0.9 * 0.1 / x.numel()), rel=0.2)


def test_mean_jackknife_and_ratio_estimates_agree_on_a_mean() -> None:
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(500, generator=gen, dtype=torch.float64) + 3.0
    mean = common.mean_estimate(x)
    jack = common.jackknife(torch.stack([x, torch.ones_like(x)], dim=1), lambda s: s[0] / s[1])
    ratio = common.ratio_estimate(x, torch.ones_like(x))
    assert mean.value == pytest.approx(jack.value) == pytest.approx(ratio.value)
    # For a mean all three are std / sqrt(n) (the jackknife's exactly, the others to 1/n).
    assert jack.stderr == pytest.approx(mean.stderr, rel=1e-9)
    assert ratio.stderr == pytest.approx(mean.stderr, rel=0.01)


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.0191, "≤ 0.02"), (0.072, "≤ 0.08"), (0.02, "≤ 0.02"), (3e-11, "≤ 3e-11"), (0.0, "0")],
)
def test_upper_bound_rounds_up(value: float, text: str) -> None:
    assert common.upper_bound(value) == text


def test_floored_prints_a_bound_and_keeps_an_exact_zero_only_when_asked() -> None:
    assert common.floored(2e-7, 1e-6) == "< 1e-06"
    assert common.floored(0.0, 1e-6) == 0.0
    assert common.floored(0.0, 1e-6, keep_zero=False) == "< 1e-06"
    assert common.floored(3e-6, 1e-6) == 3e-6


def test_report_prints_an_estimate_and_keeps_both_numbers_in_json() -> None:
    report = common.Report(item="99", title="t", models="m")
    report.measure("bias", common.Estimate(0.00687, 0.0041))
    assert "  bias: 0.007 ± 0.004" in report.text()
    kept = common._finite(report.as_dict())["measurements"][0]["value"]
    assert kept == {"value": 0.00687, "stderr": 0.0041}
