"""Search a claim's input domain for a counterexample: the generic half of a property check.

A check states its claim as a property of ART's behaviour: ``prop(inputs)`` runs ART's code on
one input (a dict of short, named values: a shape, a dtype, a grad mode, a scale) and returns
None when the property holds there, else a :class:`Failure` (what was measured, the bound it
broke). :func:`search` tries the deterministic edge cases first (every branch a partial fix
could take: each dtype, grad on and off, the smallest and the realistic sizes), then
``samples`` inputs drawn by ``sample(rng)`` from a ``random.Random(seed)``, so the same inputs
are tried on every machine. It stops at the first failure and shrinks it: ``shrink(inputs)``
proposes simpler inputs, and the first that still fails replaces it, until none does.

The budget is a ceiling, not a cut: every edge case and every sample runs (the verdict must not
depend on the machine's speed); the time taken is measured and reported beside the budget, and
a check whose search runs over its budget says so in its domain (``seconds > budget_s``).

``Found.domain()`` is the dict ``_evidence.claim(..., domain=...)`` takes, in the shape of
``artbot.status.Domain``.
"""

from __future__ import annotations

import contextlib
import os
import random
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

Inputs = dict[str, Any]
BUDGET_S = 2.0  # seconds per claim, on a 2-core machine


@dataclass(frozen=True)
class Failure:
    """The property broken on one input: what was measured and the bound it broke."""

    measured: float | str
    bound: float | str


@dataclass
class Found:
    """What a search tried and the first counterexample it found (shrunk), if any."""

    covers: str
    budget_s: float
    seed: int | None
    inputs: int = 0
    seconds: float = 0.0
    counterexample: Inputs | None = None
    failure: Failure | None = None
    shrunk: int = 0  # shrinking steps taken
    tried: list[tuple[Inputs, float]] = field(default_factory=list, repr=False)

    @property
    def holds(self) -> bool:
        return self.counterexample is None

    def domain(self) -> dict[str, Any]:
        ce = None
        if self.counterexample is not None and self.failure is not None:
            ce = {
                "inputs": {k: short(v) for k, v in list(self.counterexample.items())[:16]},
                "measured": _number(self.failure.measured),
                "bound": _number(self.failure.bound),
            }
        return {
            "covers": self.covers[:400],
            "inputs": max(self.inputs, 1),
            "budget_s": self.budget_s,
            "seconds": round(self.seconds, 3),
            "seed": self.seed,
            "counterexample": ce,
        }

    def slowest(self, n: int = 3) -> list[tuple[Inputs, float]]:
        """The inputs that took longest, for a check's timing line."""
        return sorted(self.tried, key=lambda pair: -pair[1])[:n]

    def summary(self) -> str:
        """``held over 40 inputs (0.8 s)`` or ``fails on dtype=bfloat16, rows=512: ...``."""
        if self.counterexample is None:
            return f"held over {self.inputs} inputs ({self.seconds:.2f} s)"
        assert self.failure is not None
        given = ", ".join(f"{k}={short(v)}" for k, v in self.counterexample.items())
        return (
            f"fails on {given}: measured {_text(self.failure.measured)}, bound "
            f"{_text(self.failure.bound)} (after {self.inputs} inputs, {self.seconds:.2f} s)"
        )


def short(value: Any) -> str | int | float | bool:
    """A value as a counterexample shows it: numbers as they are, dtypes and shapes short."""
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, tuple | list):
        return "x".join(str(short(v)) for v in value)
    text = str(value).removeprefix("torch.")
    return text if len(text) <= 60 else text[:57] + "..."


def _number(value: float | str) -> float | str:
    return float(f"{value:.4g}") if isinstance(value, float) else value


def _text(value: float | str) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """torch on one thread while a search runs: on a shared 2-core machine small ops on two
    threads wait on each other (a 256 x 128 x 1000 GEMM took 20 times longer); restored after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def search(
    covers: str,
    prop: Callable[[Inputs], Failure | None],
    *,
    edges: Iterable[Mapping[str, Any]] = (),
    sample: Callable[[random.Random], Mapping[str, Any]] | None = None,
    samples: int = 0,
    shrink: Callable[[Inputs], Iterable[Mapping[str, Any]]] | None = None,
    seed: int | None = 0,
    budget_s: float = BUDGET_S,
    max_shrinks: int = 50,
) -> Found:
    """The edge cases, then ``samples`` seeded draws; the first failure, shrunk."""
    found = Found(covers=covers, budget_s=budget_s, seed=seed if samples else None)
    start = time.perf_counter()
    rng = random.Random(seed)

    def candidates() -> Iterable[Inputs]:
        yield from (dict(e) for e in edges)
        if sample is not None:
            for _ in range(samples):
                yield dict(sample(rng))

    with one_thread():
        _run(found, prop, candidates(), shrink, max_shrinks)
    found.seconds = time.perf_counter() - start
    if os.environ.get("ARTBOT_DOMAIN_DEBUG"):  # where a search's time goes, for its author
        for inputs, seconds in found.slowest(5):
            print(f"{covers[:30]}: {seconds:.3f} s {inputs}", file=sys.stderr)
    return found


def _run(
    found: Found,
    prop: Callable[[Inputs], Failure | None],
    candidates: Iterable[Inputs],
    shrink: Callable[[Inputs], Iterable[Mapping[str, Any]]] | None,
    max_shrinks: int,
) -> None:
    for inputs in candidates:
        found.inputs += 1
        began = time.perf_counter()
        failure = prop(inputs)
        found.tried.append((inputs, time.perf_counter() - began))
        if failure is not None:
            found.counterexample, found.failure = inputs, failure
            break
    if found.counterexample is not None and shrink is not None:
        steps = 0
        progress = True
        while progress and steps < max_shrinks:
            progress = False
            for simpler in shrink(found.counterexample):
                steps += 1
                failure = prop(dict(simpler))
                if failure is not None:
                    found.counterexample, found.failure = dict(simpler), failure
                    found.shrunk += 1
                    progress = True
                    break
                if steps >= max_shrinks:
                    break


def shrink_towards(inputs: Inputs, simplest: Mapping[str, Iterable[Any]]) -> Iterable[Inputs]:
    """Shrink candidates that change one field to a simpler value (``simplest[name]``: values
    in order of simplicity; only those before the current one are proposed)."""
    for name, values in simplest.items():
        if name not in inputs:
            continue
        for value in values:
            if value == inputs[name]:
                break
            yield {**inputs, name: value}
