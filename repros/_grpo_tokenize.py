"""Item 3's model of ART's ``tokenize_trajectory_groups`` (art/preprocessing/tokenize.py, 0.5.20).

The GRPO advantages as released and with the fix, and the tokenized records of one-completion
trajectories that ART's packer reads. Kept apart from the item's script so that it stays
readable; ``item03_equal_reward_groups`` re-exports these names, and ``_grpo_pack`` models
the packer they go into.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import takewhile

from _grpo_pack import TokenizedRecord

PROMPT_LEN = 6
COMPLETION_LENS = (3, 5, 8, 4, 6, 7, 5, 9)  # lengths differ, so the weights differ

AdvantagesImpl = Callable[[Sequence[float], bool], list[float | None]]


def grpo_advantages(rewards: Sequence[float], scale_rewards: bool = True) -> list[float | None]:
    """Model of tokenize.py L745-L757; None where ART drops the trajectory (advantage == 0)."""
    reward_mean = sum(rewards) / len(rewards)
    reward_std = math.sqrt(sum((r - reward_mean) ** 2 for r in rewards) / len(rewards))
    out: list[float | None] = []
    for r in rewards:
        advantage = r - reward_mean
        if scale_rewards:
            advantage /= reward_std + 1e-6
        out.append(None if advantage == 0 else advantage)
    return out


def zero_variance(rewards: Sequence[float]) -> bool:
    """artbot's fixed test (the audit gives no fix; see repros/controls/item03.toml): rewards
    equal to the first up to a relative 1e-9 (or 1e-12 absolute), by ``math.isclose``, which
    also holds for equal infinite rewards. 0.5.21's is ``abs(r - first) <= 1e-12``."""
    first = rewards[0]
    return len(rewards) <= 1 or all(
        math.isclose(r, first, rel_tol=1e-9, abs_tol=1e-12) for r in rewards
    )


def zero_variance_0521(rewards: Sequence[float]) -> bool:
    """0.5.21's test as written: all within 1e-12 of the first reward."""
    first = rewards[0]
    return len(rewards) <= 1 or all(abs(r - first) <= 1e-12 for r in rewards)


def grpo_advantages_fixed(
    rewards: Sequence[float], scale_rewards: bool = True
) -> list[float | None]:
    """The fix: a zero-variance group gets advantage 0, which drops it."""
    if zero_variance(rewards):
        return [None] * len(rewards)
    return grpo_advantages(rewards, scale_rewards)


def tokenize_batch(
    groups: Sequence[Sequence[float]],
    advantages_impl: AdvantagesImpl = grpo_advantages,
    *,
    scale_rewards: bool = True,
) -> list[TokenizedRecord]:
    """Model of tokenize_trajectory_groups for one-completion trajectories (L741-L952)."""
    records: list[TokenizedRecord] = []
    for prompt_id, rewards in enumerate(groups):
        # Token ids unique per group and per completion for groups of up to 998 trajectories.
        prompt = [1_000_000 * (prompt_id + 1) + i for i in range(PROMPT_LEN)]
        group: list[TokenizedRecord] = []
        for index, advantage in enumerate(advantages_impl(rewards, scale_rewards)):
            if advantage is None:
                continue
            n = COMPLETION_LENS[index % len(COMPLETION_LENS)]
            completion = [1_000_000 * (prompt_id + 1) + 1000 * (index + 1) + k for k in range(n)]
            group.append(
                TokenizedRecord(
                    token_ids=prompt + completion,
                    input_pos=list(range(PROMPT_LEN + n)),
                    assistant_mask=[0] * PROMPT_LEN + [1] * n,
                    logprobs=[math.nan] * PROMPT_LEN + [-0.5] * n,
                    advantage=advantage,
                    weight=1 / (n + 1e-6),  # L917-L921
                )
            )
        # L927-L949: the group's shared prefix, one short of the first trainable token.
        shared = len(
            list(
                takewhile(
                    lambda c: len(set(c)) == 1, zip(*(r.token_ids for r in group), strict=False)
                )
            )
        )
        first_scored = min(
            (next(i for i, lp in enumerate(r.logprobs) if not math.isnan(lp)) for r in group),
            default=0,
        )
        for r in group:
            r.prompt_id = prompt_id
            r.prompt_length = max(min(shared, first_scored) - 1, 0)
        records.extend(group)
    return records
