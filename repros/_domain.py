"""A claim's property searched over its declared input domain, for ``check_art`` (issue #37).

A check states a claim as a property of ART's behaviour (a predicate on what ART's function
returns for one input) and searches the claim's domain for an input on which it fails:
first a list of deterministic edge cases, then inputs drawn by a seeded sampler, until
``max_inputs`` have been tried. The first failing input is shrunk
(greedily, by the item's own simplifiers) and reported as the counterexample. The result is the
``domain`` of ``_evidence.claim`` (the shape of ``artbot.status.Domain``) and a sentence for the
verdict's detail ("fixed over 300 inputs: ...").

The API (generic; nothing here knows an item):

- ``Case``: a dict of named inputs (any values; :func:`short` writes them for the report).
- ``Failure(measured, bound)``: what ``holds`` returns when the property fails on a case
  (what was measured and the bound it broke); ``holds`` returns None when it holds.
- ``search(covers=..., edges=..., sample=..., holds=..., shrink=..., seed=0, max_inputs=300,
  budget_s=2.0) -> Found``: ``edges`` an iterable of cases, ``sample(rng)`` one case drawn with
  a ``random.Random``, ``shrink(case)`` simpler cases to try in order (default none),
  ``budget_s`` the time allowed for shrinking a counterexample.
- ``Found``: ``failure`` (the shrunk case and its Failure, or None), ``inputs`` (tried),
  ``seconds``, ``domain()`` (the dict for ``_evidence.claim``), ``summary()`` ("fixed over N
  inputs: covers" or "reproduced: counterexample ...").
- Shrinking helpers for ``shrink`` functions: :func:`replace` (the case with one key changed),
  :func:`toward_int`, :func:`shorter`.

The split (issue #53): a claim's verdict is never decided in the process that imports the code
under test. A split property is two halves: ``measure(case) -> raw`` runs ART (in the check's
process) and returns JSON values only; ``judge(case, raw) -> Failure | None`` decides, and
artbot re-runs it in its own process on what came back. A repro declares, ART-free, each
claim's :class:`Oracle` (its judge, and how artbot draws the claim's inputs: ``edges()`` and
``draws`` calls of ``sample(rng)`` with a seed the check's process never sees) in a module-level
``ORACLES = {claim_id: Oracle(...)}``; ``search(claim=..., channel=art, measure=..., judge=...)``
then measures exactly the inputs artbot drew (``channel.plan[claim]``, when artbot sent a plan)
and tapes every ``(case, raw)`` it measured (``channel.tape[claim]``), the shrinking's too.
artbot's side (``artbot/verify/rejudge.py``) judges the tape again: a failure anywhere is the
verdict "reproduced" (the last failing entry is the counterexample, as shrinking leaves it);
"fixed" needs every drawn input measured and every entry passing. Cases and raw outputs cross
as JSON, so a case's values are JSON values (tuples arrive as lists).

Every declared input runs, however slow the machine: the number of inputs is fixed by
``max_inputs`` and the seed, so no clock decides a verdict. Only the shrinking of a
counterexample is bounded by time (``budget_s``): it changes what the counterexample shows,
never whether there is one. Issue #39's CI run showed why: when a 2 s budget also cut the
inputs, item 4's three realistic-size cases spent it all on a loaded machine, and a fake that
upcasts BF16 only was judged fixed before its FP16 case ran; six other fakes were caught only
by draws 9 to 25, past where a slow machine would have stopped.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

Case = dict[str, Any]
MAX_SHOWN = 16  # keys of a counterexample (artbot.status.Counterexample's limit)


@dataclass(frozen=True)
class Failure:
    """The property failed: ``measured`` (a number or a short text) broke ``bound``."""

    measured: float | str
    bound: float | str


Measure = Callable[[Case], Any]
Judge = Callable[[Case, Any], "Failure | None"]


@dataclass(frozen=True)
class Oracle:
    """How artbot judges one claim outside the check's process: ``judge(case, raw)`` (pure: no
    ART, nothing of the check's process), the inputs it draws for it (``edges()``, deterministic
    and ART-free, then ``draws`` calls of ``sample(rng)`` with artbot's secret seed)."""

    judge: Judge
    edges: Callable[[], list[Case]] | None = None
    sample: Callable[[random.Random], Case] | None = None
    draws: int = 0

    def plan(self, rng: random.Random) -> list[Case]:
        """The inputs artbot asks the check's process to measure, as JSON values."""
        cases = list(self.edges()) if self.edges is not None else []
        if self.sample is not None:
            cases += [self.sample(rng) for _ in range(self.draws)]
        return [as_json(c) for c in cases]


class Channel(Protocol):
    """What a check's ``art`` carries between artbot and ``search``: the inputs artbot drew per
    claim (``plan``; empty when a repro runs on its own) and the tape of what was measured."""

    plan: dict[str, list[Case]]
    tape: dict[str, list[dict[str, Any]]]


def as_json(value: Any) -> Any:
    """``value`` as it arrives after a JSON round trip (tuples become lists, keys text)."""
    return json.loads(json.dumps(value, allow_nan=True))


@dataclass
class Found:
    covers: str
    budget_s: float
    seed: int | None
    inputs: int = 0
    seconds: float = 0.0
    failure: tuple[Case, Failure] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def holds(self) -> bool:
        return self.failure is None

    def counterexample(self) -> dict[str, Any] | None:
        if self.failure is None:
            return None
        case, fail = self.failure
        shown = {k: short(v) for k, v in list(case.items())[:MAX_SHOWN]}
        return {"inputs": shown, "measured": _num(fail.measured), "bound": _num(fail.bound)}

    def domain(self) -> dict[str, Any]:
        """The ``domain`` argument of ``_evidence.claim``."""
        return {
            "covers": self.covers[:400],
            "inputs": self.inputs,
            "budget_s": self.budget_s,
            "seconds": round(self.seconds, 3),
            "seed": self.seed,
            "counterexample": self.counterexample(),
        }

    def summary(self) -> str:
        if self.failure is None:
            return f"fixed over {self.inputs} inputs: {self.covers}"
        case, fail = self.failure
        given = ", ".join(f"{k}={short(v)}" for k, v in case.items())
        return (
            f"counterexample after {self.inputs} inputs: {given}: measured "
            f"{_num(fail.measured)}, bound {_num(fail.bound)}"
        )


def search(
    *,
    covers: str,
    edges: Iterable[Case],
    sample: Callable[[random.Random], Case],
    holds: Callable[[Case], Failure | None] | None = None,
    shrink: Callable[[Case], Iterable[Case]] | None = None,
    seed: int = 0,
    max_inputs: int = 300,
    budget_s: float = 2.0,
    claim: str | None = None,
    channel: Channel | None = None,
    measure: Measure | None = None,
    judge: Judge | None = None,
) -> Found:
    """Edge cases, then seeded draws, until a failure or ``max_inputs``. A split property
    (``measure`` and ``judge`` instead of ``holds``) names its ``claim`` and tapes what it
    measured on ``channel``; when artbot drew the claim's inputs (``channel.plan``), those are
    the inputs, in artbot's order, and the edges and draws given here are not used."""
    found = Found(covers=covers, budget_s=budget_s, seed=seed)
    if measure is not None:
        if judge is None or holds is not None or claim is None:
            raise TypeError("a split property gives claim, measure and judge, and no holds")
        holds = _taped(claim, channel, measure, judge)
        planned = channel.plan.get(claim) if channel is not None else None
        if planned is not None:
            edges, sample, max_inputs = list(planned), _none_left, len(planned)
            found.seed = None  # artbot's, said by artbot once the run is over
    if holds is None:
        raise TypeError("search needs holds, or measure and judge")
    with _one_thread():
        _run(found, edges, sample, holds, shrink, seed, max_inputs, budget_s)
    return found


def _none_left(rng: random.Random) -> Case:
    raise AssertionError("artbot's plan is measured whole: no draws past it")


def _taped(
    claim: str, channel: Channel | None, measure: Measure, judge: Judge
) -> Callable[[Case], Failure | None]:
    """``holds`` of a split property: measure, tape ``(case, raw)`` as JSON, judge what was
    taped (so this process decides on the values artbot will judge again)."""
    tape = channel.tape.setdefault(claim, []) if channel is not None else []

    def holds(case: Case) -> Failure | None:
        case = as_json(case)
        raw = as_json(measure(case))
        tape.append({"case": case, "raw": raw})
        return judge(case, raw)

    return holds


def _run(
    found: Found,
    edges: Iterable[Case],
    sample: Callable[[random.Random], Case],
    holds: Callable[[Case], Failure | None],
    shrink: Callable[[Case], Iterable[Case]] | None,
    seed: int,
    max_inputs: int,
    budget_s: float,
) -> None:
    start = time.perf_counter()
    rng = random.Random(seed)

    def cases() -> Iterator[Case]:
        yield from edges
        while True:
            yield sample(rng)

    # Every declared input runs, whatever the machine's speed: no clock decides a verdict.
    for case in itertools.islice(cases(), max_inputs):
        found.inputs += 1
        fail = holds(case)
        if fail is not None:
            found.failure = _shrink(case, fail, holds, shrink, time.perf_counter() + budget_s)
            break
    found.seconds = time.perf_counter() - start


@contextmanager
def _one_thread() -> Iterator[None]:
    """Torch on one intra-op thread while searching: the inputs are small tensors, and on a
    loaded machine a thread pool makes each call 30 times slower (measured: 30 steps of item
    7's property, 0.83 s with the default pool, 0.027 s on one thread, at a load of 6 on 2
    cores)."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _shrink(
    case: Case,
    fail: Failure,
    holds: Callable[[Case], Failure | None],
    shrink: Callable[[Case], Iterable[Case]] | None,
    deadline: float,
) -> tuple[Case, Failure]:
    """Greedy: take the first simpler case that still fails, until none does (or time)."""
    if shrink is None:
        return case, fail
    improved = True
    while improved and time.perf_counter() < deadline:
        improved = False
        for smaller in shrink(case):
            if time.perf_counter() > deadline:
                break
            again = holds(smaller)
            if again is not None:
                case, fail, improved = smaller, again, True
                break
    return case, fail


def replace(case: Case, key: str, value: Any) -> Case:
    out = dict(case)
    out[key] = value
    return out


def toward_int(value: int, target: int) -> list[int]:
    """Simpler integers between ``target`` and ``value``: the target, then halfway, then one
    step closer."""
    if value == target:
        return []
    step = 1 if value > target else -1
    return list(dict.fromkeys([target, (value + target) // 2, value - step]))


def shorter(values: list[Any], minimum: int) -> list[list[Any]]:
    """``values`` with its second half, or its last element, dropped (never below ``minimum``)."""
    out = []
    for n in (max(minimum, len(values) // 2), len(values) - 1):
        if minimum <= n < len(values):
            out.append(values[:n])
    return out


def short(value: Any) -> str | int | float | bool:
    """A value as a counterexample shows it: numbers as they are, anything else as short text."""
    if isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, list | tuple):
        text = "[" + ", ".join(_item(v) for v in value[:6]) + (", ...]" if len(value) > 6 else "]")
        return f"{text} ({len(value)})" if len(value) > 6 else text
    return str(value)[:80]


def _item(v: Any) -> str:
    return f"{v:.17g}" if isinstance(v, float) else str(v)


def _num(v: float | str) -> float | str:
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    return v


def ulps(dtype: Any) -> float:
    """Machine epsilon of a torch dtype (one ulp at 1.0), for tolerances in units of it."""
    import torch

    return float(torch.finfo(dtype).eps)


def pairwise_cases(dimensions: dict[str, tuple[Any, ...]]) -> list[Case]:
    """A covering array: cases in which every pair of values of two dimensions occurs in some
    case (greedy, deterministic), and each dimension's every value at least once. ``dimensions``
    maps a name to its values; the first case takes each dimension's last value (its largest,
    where a dimension lists values in order), so every dimension's maximum is in one case."""
    names = list(dimensions)
    uncovered = {
        (a, i, b, j)
        for x, a in enumerate(names)
        for b in names[x + 1 :]
        for i in range(len(dimensions[a]))
        for j in range(len(dimensions[b]))
    }
    out: list[Case] = [{n: dimensions[n][-1] for n in names}]
    _cover(uncovered, {n: len(dimensions[n]) - 1 for n in names}, names)
    while uncovered:
        a, i, b, j = min(uncovered)
        pick = {a: i, b: j}
        for n in names:
            if n in pick:
                continue
            gains = [
                sum(_pair(pick, n, k, m, uncovered) for m in pick)
                for k in range(len(dimensions[n]))
            ]
            pick[n] = max(range(len(gains)), key=lambda k: gains[k])
        _cover(uncovered, pick, names)
        out.append({n: dimensions[n][pick[n]] for n in names})
    return out


def _pair(pick: dict[str, int], n: str, k: int, m: str, uncovered: set[Any]) -> bool:
    return (n, k, m, pick[m]) in uncovered or (m, pick[m], n, k) in uncovered


def _cover(uncovered: set[Any], pick: dict[str, int], names: list[str]) -> None:
    for x, a in enumerate(names):
        for b in names[x + 1 :]:
            uncovered.discard((a, pick[a], b, pick[b]))
