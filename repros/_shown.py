"""The entries of a model-side check's outputs that artbot judges (issue #53), for items 2, 4
and 401's split properties (``_art_head``, ``_art_logprobs``, ``_art_lse``).

A check's ``measure`` returns numbers, not tensors: the values ART's code produced at a few
entries of each output, chosen from the input alone (so artbot's ``judge`` knows which), and
the judge holds them to its float64 oracle at the same entries.

- :func:`spread`: at most ``k`` indices of ``range(n)``, the first and the last among them, the
  others drawn with the input's generator.
- :func:`worst`: the largest ``|got - exact| / bound`` over the entries, where ``got`` is what
  came back as JSON; None when it is not numbers of the oracle's shape (a malformed answer is
  the judge's to call a failure, never an exception).
- :func:`made_once`: an input's operands made once for its measure and its judge (the check's
  process runs both on each input, one after the other), each caller given its own copies.
- :func:`outside`: why a case is not an input of the claim's domain (a key missing, a value not
  one of its choices, a size past its limit), or None. A judge asks first: the cases of a tape
  come back from the check's process, and a judge must never make operands of any size it is
  handed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

Make = Callable[[dict[str, Any]], tuple[torch.Tensor, ...]]


def outside(
    case: Any, choices: Mapping[str, Sequence[Any]], limits: Mapping[str, tuple[float, float]]
) -> str | None:
    """Why ``case`` is not an input of the domain: each key of ``choices`` holds one of its
    values, each of ``limits`` a number (an int where the bounds are) within its bounds."""
    if not isinstance(case, dict):
        return "an input that is not a case"
    for key, values in choices.items():
        value = case.get(key)
        if not any(value == v and type(value) is type(v) for v in values):
            return f"{key}={str(value)[:20]} outside the domain"
    for key, (lo, hi) in limits.items():
        value = case.get(key)
        kinds = (int,) if isinstance(lo, int) and isinstance(hi, int) else (int, float)
        if type(value) not in kinds or not lo <= float(value) <= hi:  # type: ignore[arg-type]
            return f"{key}={str(value)[:20]} outside the domain"
    return None


def made_once(make: Make) -> Make:
    """``make`` remembering the last case it made operands for; every call returns copies
    (a measure sets ``requires_grad`` on them and ART's code may write into them)."""
    last: dict[str, Any] = {}

    def operands(case: dict[str, Any]) -> tuple[torch.Tensor, ...]:
        key = json.dumps(case, sort_keys=True)
        if last.get("key") != key:
            last.update(key=key, made=make(case))
        return tuple(t.clone() for t in last["made"])

    operands.__doc__ = make.__doc__
    return operands


def spread(n: int, k: int, gen: torch.Generator) -> torch.Tensor:
    """At most ``k`` of ``range(n)``, sorted: 0 and n - 1, the others drawn with ``gen``."""
    if n <= k:
        return torch.arange(n)
    inner = torch.randperm(n - 2, generator=gen)[: k - 2] + 1
    return torch.cat([torch.tensor([0, n - 1]), inner]).sort().values


def worst(got: Any, exact: torch.Tensor, bound: torch.Tensor) -> float | None:
    """The largest |got - exact| / bound (inf where a value is NaN); None when ``got`` is not
    numbers of ``exact``'s shape."""
    try:
        values = torch.tensor(got, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        return None
    if values.shape != exact.shape:
        return None
    ratio = (values - exact).abs() / bound.clamp_min(1e-300)
    return float("inf") if bool(ratio.isnan().any()) else float(ratio.max())
