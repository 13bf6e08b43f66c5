"""The model-side property checks' helpers (issue #37), on inputs made up here: shrinking toward
simpler values and the verdict's words (repros/_simpler.py, over repros/_domain.py's search),
and the dtype reading of item 11's check (repros/_dtype_read.py)."""

from __future__ import annotations

import ast
import random
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from artbot.repro.scripts import import_script
from artbot.status import Domain

REPROS = Path(__file__).resolve().parents[2] / "repros"
sys.path.insert(0, str(REPROS))  # as the repros find their helpers
domain = import_script(REPROS / "_domain.py", "_domain")
simpler = import_script(REPROS / "_simpler.py", "repros_simpler_under_test")
dtype_read = import_script(REPROS / "_dtype_read.py", "repros_dtype_read_under_test")


def _fails_above(limit: int):  # type: ignore[no-untyped-def]
    """A property of {"n": int, "dtype": str} that fails for n > limit in float16 only."""

    def holds(case: dict[str, object]) -> object:
        n = case["n"]
        assert isinstance(n, int)
        if case["dtype"] == "float16" and n > limit:
            return domain.Failure(float(n), float(limit))
        return None

    return holds


def _sample(rng: random.Random) -> dict[str, object]:
    return {"n": rng.randint(1, 1000), "dtype": rng.choice(["bfloat16", "float16"])}


def test_a_counterexample_shrinks_toward_the_simplest_values_that_still_fail() -> None:
    edges = [{"n": 900, "dtype": "float16"}]
    simplest = {"n": (1, 10, 50, 100, 500), "dtype": ("bfloat16",)}
    found = domain.search(
        covers="n; dtype",
        edges=edges,
        sample=_sample,
        holds=_fails_above(60),
        shrink=lambda case: simpler.toward(case, simplest),
        max_inputs=1,
        budget_s=30.0,
    )
    # bfloat16 never fails and n = 1, 10, 50 hold: 100 is the first simpler n that still fails.
    assert found.failure is not None and found.failure[0] == {"n": 100, "dtype": "float16"}
    ce = Domain.model_validate(found.domain()).counterexample
    assert ce is not None and ce.measured == 100.0 and ce.bound == 60.0
    assert simpler.said(found).startswith("fails on n=100, dtype=float16: measured 100")


@given(seed=st.integers(min_value=0, max_value=2**31))
def test_a_property_that_holds_is_said_to_hold_over_every_input_tried(seed: int) -> None:
    found = domain.search(
        covers="n",
        edges=[],
        sample=_sample,
        holds=_fails_above(10**9),
        seed=seed,
        max_inputs=5,
        budget_s=30.0,
    )
    assert found.holds and simpler.said(found).startswith("held over 5 inputs")


def test_toward_proposes_only_values_simpler_than_the_current_one() -> None:
    simplest = {"dtype": ("bfloat16",), "rows": (1, 64, 512)}
    proposed = list(simpler.toward({"dtype": "bfloat16", "rows": 64, "x": 3}, simplest))
    assert proposed == [{"dtype": "bfloat16", "rows": 1, "x": 3}]


def _returned(source: str) -> list[tuple[bool, str]]:
    fn = ast.parse(source).body[0]
    assert isinstance(fn, ast.FunctionDef)
    reader = dtype_read.Reader(fn)
    return [dtype_read.add_kept_wide(reader, r) for r in dtype_read.returned_adds(fn)]


@pytest.mark.parametrize(
    ("body", "wide"),
    [
        ("return base.float() + delta.float(), bias", True),
        # an FP32 sum cast back to another tensor's dtype: the input's
        ("return (base.float() + delta.float()).to(x.dtype), bias", False),
        # a dtype chosen by a flag: the narrower holds whenever the flag is off
        (
            "dt = torch.float32 if flag else base.dtype\n"
            "    return base.to(dt) + delta.to(dt), bias",
            False,
        ),
        # a dtype held in a name, followed to its assignment
        ("acc = torch.float32\n    return base.to(acc) + delta.to(dtype=acc), bias", True),
        # a sum returned through a name is read, and its BF16 add found
        ("total = base + delta\n    return total, bias", False),
        ("total = base.float() + delta.float()\n    return total, bias", True),
        # a move to a device is not a cast
        ("return base.float().to(x.device) + delta.float(), bias", True),
    ],
)
def test_dtype_reading_of_a_returned_add(body: str, wide: bool) -> None:
    (got,) = _returned(f"def forward(self, x):\n    {body}\n")
    assert got[0] is wide, got[1]


def test_a_returned_value_made_by_other_calls_on_a_name_is_not_a_sum() -> None:
    source = (
        "def forward(self, x):\n    zero = x.sum() * 0.0\n    return zero.expand(3).clone(), None\n"
    )
    assert _returned(source) == []
