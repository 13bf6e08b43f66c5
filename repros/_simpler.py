"""Shrinking and wording for the model-side property checks (items 2, 4, 5, 11, 401), on top of
``_domain`` (the generic search).

- :func:`toward`: a ``shrink`` for ``_domain.search``: the case with one key set to a simpler
  value, from a table of values per key in order of simplicity (only those before the current
  value are proposed), so a counterexample shrinks to the simplest dtype, grad mode and size
  that still fails, never to a costlier one.
- :func:`search`: ``_domain.search`` over a check's edge cases, then ``samples`` seeded draws,
  shrinking :func:`toward` the simplest values; a split property (issue #53) gives ``claim``,
  ``channel``, ``measure`` and ``judge`` instead of ``holds``, passed through as they are.
- :func:`said`: what a search found, in a few words for a verdict's detail ("held over 36
  inputs (0.72 s)" or "fails on dtype=bfloat16, ...: measured ..., bound ..."); the domain
  itself (what was covered, how many inputs) goes with the claim as ``_domain.Found.domain()``.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import _domain


def toward(case: dict[str, Any], simplest: Mapping[str, Sequence[Any]]) -> Iterator[dict[str, Any]]:
    for key, values in simplest.items():
        if key not in case:
            continue
        for value in values:
            if value == case[key]:
                break
            yield _domain.replace(case, key, value)


def search(
    covers: str,
    edges: list[dict[str, Any]],
    holds: Callable[[dict[str, Any]], _domain.Failure | None] | None,
    simplest: Mapping[str, Sequence[Any]],
    *,
    sample: Callable[[random.Random], dict[str, Any]] | None = None,
    samples: int = 0,
    seed: int = 0,
    claim: str | None = None,
    channel: _domain.Channel | None = None,
    measure: _domain.Measure | None = None,
    judge: _domain.Judge | None = None,
) -> _domain.Found:
    """Every case of ``edges``, then ``samples`` cases drawn by ``sample`` (none: the edge cases
    only), a counterexample shrunk :func:`toward` ``simplest``. A split property (issue #53)
    gives ``claim``, ``channel``, ``measure`` and ``judge`` instead of ``holds``, passed on to
    ``_domain.search`` (which then measures artbot's plan, when there is one)."""
    return _domain.search(
        covers=covers,
        edges=edges,
        sample=sample or (lambda rng: rng.choice(edges)),
        holds=holds,
        shrink=lambda inp: toward(inp, simplest),
        seed=seed,
        max_inputs=len(edges) + samples,
        claim=claim,
        channel=channel,
        measure=measure,
        judge=judge,
    )


def said(found: Any) -> str:
    if found.failure is None:
        return f"held over {found.inputs} inputs ({found.seconds:.2f} s)"
    case, fail = found.failure
    given = ", ".join(f"{k}={_domain.short(v)}" for k, v in case.items())
    return (
        f"fails on {given}: measured {_text(fail.measured)}, bound {_text(fail.bound)} "
        f"(after {found.inputs} inputs, {found.seconds:.2f} s)"
    )


def _text(value: float | str) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def pairwise(factors: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """A covering array of ``factors``: every pair of values of two factors occurs in some
    case, and the first case takes each factor's last value (its maximum, when the values are
    listed in order). Greedy over the full product (small domains only), deterministic."""
    keys = list(factors)
    product = [
        dict(zip(keys, values, strict=True)) for values in itertools.product(*factors.values())
    ]

    def pairs(case: dict[str, Any]) -> set[tuple[str, Any, str, Any]]:
        return {
            (a, repr(case[a]), b, repr(case[b])) for i, a in enumerate(keys) for b in keys[i + 1 :]
        }

    wanted = set().union(*(pairs(c) for c in product))
    cases = [{k: v[-1] for k, v in factors.items()}]
    wanted -= pairs(cases[0])
    while wanted:
        best = max(product, key=lambda c: len(pairs(c) & wanted))
        cases.append(best)
        wanted -= pairs(best)
    return cases
