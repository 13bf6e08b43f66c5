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
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import torch

Make = Callable[[dict[str, Any]], tuple[torch.Tensor, ...]]


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
