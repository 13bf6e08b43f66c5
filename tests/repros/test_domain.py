"""repros/_domain.py: a claim's property searched over its domain (issue #37): edge cases first,
then seeded draws; the first counterexample shrunk; the result in the shape verify records."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from artbot.repro.scripts import import_script
from artbot.status import Domain

REPROS = Path(__file__).resolve().parents[2] / "repros"
domain = import_script(REPROS / "_domain.py", "repros_domain_under_test")


def _below(limit: int) -> Any:
    """The property "every value of the list is below ``limit``"."""

    def holds(case: dict[str, Any]) -> Any:
        worst = max(case["values"])
        return domain.Failure(float(worst), float(limit)) if worst >= limit else None

    return holds


def _draw(rng: Any) -> dict[str, Any]:
    return {"values": [rng.randint(0, 100) for _ in range(rng.randint(1, 20))]}


def _shrink(case: dict[str, Any]) -> list[dict[str, Any]]:
    out = [{"values": v} for v in domain.shorter(case["values"], 1)]
    out += [{"values": case["values"][1:]}] if len(case["values"]) > 1 else []
    return out


def test_a_property_that_holds_is_searched_to_the_declared_count() -> None:
    found = domain.search(
        covers="lists of 1-20 integers 0-100",
        edges=[{"values": [0]}],
        sample=_draw,
        holds=_below(101),
        max_inputs=120,
    )
    assert found.holds and found.inputs == 120
    assert found.summary().startswith("fixed over 120 inputs: lists of 1-20")
    recorded = Domain.model_validate(found.domain())
    assert recorded.inputs == 120 and recorded.counterexample is None
    assert recorded.seed == 0 and recorded.budget_s == 2.0


def test_an_edge_case_is_tried_before_any_draw_and_the_counterexample_is_shrunk() -> None:
    found = domain.search(
        covers="lists",
        edges=[{"values": [1, 2, 200, 3, 4]}],
        sample=_draw,
        holds=_below(150),
        shrink=_shrink,
    )
    assert not found.holds and found.inputs == 1
    case, failure = found.failure
    assert case == {"values": [200]}  # the greedy shrink keeps only the failing member
    assert failure == domain.Failure(200.0, 150.0)
    recorded = Domain.model_validate(found.domain())
    assert recorded.counterexample is not None
    assert recorded.counterexample.inputs == {"values": "[200]"}
    assert recorded.counterexample.measured == 200.0
    assert "counterexample after 1 inputs: values=[200]: measured 200.0" in found.summary()


@given(seed=st.integers(0, 2**32 - 1))
def test_the_same_seed_draws_the_same_inputs(seed: int) -> None:
    seen: list[list[list[int]]] = [[], []]
    for run in seen:

        def holds(case: dict[str, Any], run: list[list[int]] = run) -> None:
            run.append(case["values"])

        domain.search(covers="x", edges=[], sample=_draw, holds=holds, seed=seed, max_inputs=5)
    assert seen[0] == seen[1] and len(seen[0]) == 5


def test_every_declared_input_runs_however_slow_and_the_budget_bounds_the_shrink_only() -> None:
    """A 2 s budget that also cut the inputs let a loaded machine judge item 4's BF16-only fake
    fixed before its FP16 edge case ran (issue #39's CI run): no clock decides a verdict."""
    tried: list[int] = []

    def slow(case: dict[str, Any]) -> Any:
        tried.append(case["values"][0])
        time.sleep(0.02)
        return domain.Failure(1.0, 0.0) if case["values"][0] >= 107 else None

    edges = [{"values": [n]} for n in range(100, 108)]  # the failing case last, past the budget
    found = domain.search(
        covers="x", edges=edges, sample=_draw, holds=slow, max_inputs=100, budget_s=0.05
    )
    assert tried[:8] == list(range(100, 108)) and not found.holds and found.inputs == 8

    found = domain.search(  # the draws hold: every one of them runs, past the budget too
        covers="x", edges=edges[:2], sample=_draw, holds=slow, max_inputs=12, budget_s=0.05
    )
    assert found.holds and found.inputs == 12 and found.seconds > 0.05
    assert found.summary().startswith("fixed over 12 inputs: x")

    def shrink(case: dict[str, Any]) -> list[dict[str, Any]]:  # never simpler: runs out of time
        return [{"values": [case["values"][0] + 1]}]

    found = domain.search(
        covers="x", edges=edges[7:], sample=_draw, holds=slow, shrink=shrink, budget_s=0.1
    )
    assert not found.holds and found.failure is not None and found.failure[0]["values"][0] > 107


def test_values_are_shown_short_and_non_finite_numbers_as_text() -> None:
    assert domain.short(float("inf")) == "inf"
    assert domain.short(3) == 3 and domain.short(True) is True
    assert domain.short(list(range(10))) == "[0, 1, 2, 3, 4, 5, ...] (10)"
    assert domain.toward_int(8, 1) == [1, 4, 7]
    assert domain.shorter([1, 2, 3, 4], 2) == [[1, 2], [1, 2, 3]]


def test_torch_runs_on_one_thread_during_the_search_only() -> None:
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    during: list[int] = []

    def holds(case: dict[str, Any]) -> None:
        during.append(torch.get_num_threads())

    domain.search(covers="x", edges=[], sample=_draw, holds=holds, max_inputs=2)
    assert during == [1, 1] and torch.get_num_threads() == before


@given(
    st.dictionaries(
        st.sampled_from("abcdefg"), st.integers(min_value=1, max_value=4), min_size=1, max_size=7
    )
)
def test_a_covering_array_holds_every_pair_and_starts_at_every_maximum(
    sizes: dict[str, int],
) -> None:
    dims = {name: tuple(range(n)) for name, n in sizes.items()}
    cases = domain.pairwise_cases(dims)
    assert cases[0] == {name: values[-1] for name, values in dims.items()}
    names = list(dims)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            seen = {(case[a], case[b]) for case in cases}
            assert seen == {(x, y) for x in dims[a] for y in dims[b]}, (a, b)
    largest = max(sizes.values())
    second = sorted(sizes.values())[-2] if len(sizes) > 1 else 1
    assert len(cases) <= 2 * largest * second + 1  # greedy: near the lower bound, not the product
