"""Item 3's model of ART's packer for ``pack_results=False`` (art/preprocessing/pack.py, 0.5.20).

Kept apart from the item's script so that it stays readable; ``item03_equal_reward_groups``
re-exports these names. ``tests/repros/test_art_models.py`` checks the model against ART's own
``packed_tensors_from_tokenized_results`` from the 0.5.20 wheel, value for value.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class TokenizedRecord:
    """The fields of ART's ``TokenizedResult`` that its packer reads."""

    token_ids: list[int]
    input_pos: list[int]
    assistant_mask: list[int]
    logprobs: list[float]
    advantage: float
    weight: float = 0.0
    prompt_id: int = 0
    prompt_length: int = 0
    pixel_values: None = None
    image_grid_thw: None = None
    moe_routed_experts: None = None


def normalize_pack(
    advantages: torch.Tensor,
    weights: torch.Tensor,
    assistant_mask: torch.Tensor,
    *,
    advantage_balance: float = 0.0,
    guard_zero_mean: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Model of pack.py L323-L353 on [rows, seq_len] float32 tensors.

    ``guard_zero_mean`` divides only by a positive mean, as 0.5.21 does."""
    weights = torch.where(assistant_mask, weights, torch.zeros_like(weights))
    if bool(assistant_mask.any()):
        mean = weights[assistant_mask].mean()
        if not guard_zero_mean or mean > 0:
            weights[assistant_mask] /= mean
    advantages = torch.where(assistant_mask, advantages, torch.zeros_like(advantages))
    if advantage_balance > 0.0:
        advantages = torch.where(advantages > 0, advantages, advantages * (1 - advantage_balance))
    elif advantage_balance < 0.0:
        advantages = torch.where(advantages < 0, advantages, advantages * (1 + advantage_balance))
    if bool(assistant_mask.any()):
        mean = (advantages[assistant_mask].abs() * weights[assistant_mask]).mean()
        if not guard_zero_mean or mean > 0:
            advantages[assistant_mask] /= mean
    return advantages, weights


def packed_tensors_from_tokenized_results(
    tokenized_results: Sequence[Any],
    seq_len: int,
    pad_token_id: int = -100,
    truncate_long_results: bool = True,
    advantage_balance: float = 0.0,
    verbosity: int = 1,
    pack_results: bool = True,
    *,
    guard_zero_mean: bool = False,
) -> dict[str, torch.Tensor]:
    """Model of ART's packer for ``pack_results=False``: one result per row, then
    normalize_pack. Results with no completion token after ``prompt_length`` are skipped,
    as pack.py L255-L258 does."""
    if pack_results:
        raise ValueError("this model lays out one result per row (pack_results=False)")
    del truncate_long_results, verbosity
    kept = [r for r in tokenized_results if sum(r.assistant_mask[r.prompt_length :]) > 0]
    if not kept:
        raise RuntimeError("No tokenized results were packable")
    # pack.py L272: rows are shuffled with a seed of their count. Order changes no value,
    # only the float32 summation order of the means, so it is kept to match bit for bit.
    random.Random(len(kept)).shuffle(kept)
    rows = len(kept)
    tokens = torch.full((rows, seq_len), pad_token_id, dtype=torch.long)
    assistant = torch.zeros((rows, seq_len), dtype=torch.bool)
    advantages = torch.zeros((rows, seq_len), dtype=torch.float32)
    weights = torch.zeros((rows, seq_len), dtype=torch.float32)
    for row, r in enumerate(kept):
        n = len(r.token_ids)
        tokens[row, :n] = torch.tensor(r.token_ids)
        assistant[row, :n] = torch.tensor(r.assistant_mask, dtype=torch.bool)
        advantages[row, :n] = r.advantage  # float64 into a float32 array, as np does
        weights[row, :n] = r.weight
    advantages, weights = normalize_pack(
        advantages,
        weights,
        assistant,
        advantage_balance=advantage_balance,
        guard_zero_mean=guard_zero_mean,
    )
    return {
        "tokens": tokens,
        "assistant_mask": assistant,
        "advantages": advantages,
        "weights": weights,
    }


def fixed_pack(tokenized_results: Sequence[Any], seq_len: int, **kwargs: Any) -> dict:
    """The packer with 0.5.21's guard on the normalizer."""
    return packed_tensors_from_tokenized_results(
        tokenized_results, seq_len, guard_zero_mean=True, **kwargs
    )
