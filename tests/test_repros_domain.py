"""repros/_domain.py (the search every property check of issue #37 uses) and the dtype reading of
item 11's check (repros/_dtype_read.py): what they find, on inputs made up here."""

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

REPROS = Path(__file__).resolve().parents[1] / "repros"
sys.path.insert(0, str(REPROS))  # as the repros find their helpers
domain = import_script(REPROS / "_domain.py", "repros_domain_under_test")
dtype_read = import_script(REPROS / "_dtype_read.py", "repros_dtype_read_under_test")


def _fails_above(limit: int):  # type: ignore[no-untyped-def]
    """A property of {"n": int, "dtype": str} that fails for n > limit in float16 only."""

    def prop(inp: dict[str, object]) -> object:
        n = inp["n"]
        assert isinstance(n, int)
        if inp["dtype"] == "float16" and n > limit:
            return domain.Failure(float(n), float(limit))
        return None

    return prop


def _sample(rng: random.Random) -> dict[str, object]:
    return {"n": rng.randint(1, 1000), "dtype": rng.choice(["bfloat16", "float16"])}


def test_a_property_that_holds_reports_every_input_tried_and_no_counterexample() -> None:
    edges = [{"n": 1, "dtype": "bfloat16"}, {"n": 1000, "dtype": "bfloat16"}]
    found = domain.search(
        "n 1-1000; dtype bfloat16", _fails_above(10**9), edges=edges, sample=_sample, samples=5
    )
    assert found.holds and found.inputs == 7
    shaped = Domain.model_validate(found.domain())
    assert shaped.counterexample is None and shaped.inputs == 7 and shaped.seed == 0
    assert found.summary().startswith("held over 7 inputs")


def test_the_first_failure_is_shrunk_to_the_simplest_input_that_still_fails() -> None:
    edges = [{"n": 900, "dtype": "float16"}]
    simplest = {"n": (1, 10, 50, 100, 500), "dtype": ("bfloat16",)}
    found = domain.search(
        "n; dtype",
        _fails_above(60),
        edges=edges,
        shrink=lambda inp: domain.shrink_towards(inp, simplest),
    )
    # bfloat16 never fails and n = 1, 10, 50 hold: 100 is the first simpler n that still fails.
    assert found.counterexample == {"n": 100, "dtype": "float16"}
    ce = Domain.model_validate(found.domain()).counterexample
    assert ce is not None and ce.inputs == {"n": 100, "dtype": "float16"}
    assert ce.measured == 100.0 and ce.bound == 60.0
    assert "fails on n=100, dtype=float16" in found.summary()


@given(seed=st.integers(min_value=0, max_value=2**31))
def test_the_same_seed_draws_the_same_inputs(seed: int) -> None:
    runs = [
        domain.search("n", _fails_above(10**9), sample=_sample, samples=4, seed=seed)
        for _ in range(2)
    ]
    assert [i for i, _ in runs[0].tried] == [i for i, _ in runs[1].tried]


def test_edge_cases_run_before_the_draws_and_stop_the_search_at_a_failure() -> None:
    edges = [{"n": 5, "dtype": "bfloat16"}, {"n": 99, "dtype": "float16"}]
    found = domain.search("n", _fails_above(50), edges=edges, sample=_sample, samples=50)
    assert found.inputs == 2 and found.counterexample == edges[1]


def test_the_search_runs_torch_on_one_thread_and_restores_it() -> None:
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    seen: list[int] = []
    domain.search("n", lambda inp: seen.append(torch.get_num_threads()), edges=[{"n": 1}])
    assert seen == [1] and torch.get_num_threads() == before


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
