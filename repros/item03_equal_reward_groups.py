"""Item 3 (#1110): equal-reward GRPO groups become a full-scale advantage, or NaN, after packing.

Models (openpipe-art 0.5.20; the audit's commit e2a406a48 is in no release;
it lies between 0.5.20 and 0.5.21):

- ``art/preprocessing/tokenize.py`` L741-L757 (``tokenize_trajectory_groups``): per group,
  ``reward_mean = sum(rewards) / len(group)``, ``reward_std`` the population standard
  deviation, ``advantage = reward - reward_mean``, divided by ``reward_std + 1e-6`` when
  ``scale_rewards``, and the trajectory dropped only if ``advantage == 0``. All in Python
  floats (float64). L917-L921: each result's weight is ``1 / (assistant tokens + 1e-6)``.
- ``art/preprocessing/pack.py`` L278-L353 (``prefix_tree_pack``, reached through
  ``packed_tensors_from_tokenized_results``): advantages and weights are written per token
  into float32 arrays, zeroed off the assistant mask, weights divided by their mean over
  assistant tokens, ``advantage_balance`` applied, then advantages divided by
  ``mean(|advantage| * weight)`` over all assistant tokens of the whole batch (L349-L353).
- ``art/local/backend.py`` L993-L1143 (``_get_packed_tensors``): one ``train`` call's groups
  are tokenized and packed together, so "the pack" is the whole batch of that step; with no
  tokenized results left the step is skipped.

Where the audit's claim comes from, as found in that code: an equal-reward group's mean is a
float sum divided by n, which for rewards such as 0.1 or 0.7 and n = 3, 6, 7, 8 or 16 is not
exactly the reward. Every trajectory then gets the same tiny advantage (about 1e-11 after
``/ (std + 1e-6)``), which is not 0 and so is not dropped. When no other group in the batch has
a real spread (groups whose mean is exact were dropped), the pack normalization divides that
tiny value by itself: every token of the group trains at advantage +1 or -1. A NaN follows when
every assistant-token advantage of the batch is 0 by the time of that division: the finite
case found is ``advantage_balance`` = 1 (or -1) zeroing the tiny advantages of the only
groups left, so the division is 0 / 0. With ``advantage_balance`` = 0 a finite equal reward
cannot give NaN here: exact zeros are dropped before packing, and a tiny advantage only
rounds to 0 in float32 for rewards below about 1e-30. A group whose rewards are all -inf
gives NaN advantages (-inf - -inf) that survive the ``== 0`` drop and make the normalizer,
and so every advantage of the batch, NaN.

Assumptions:

- Each trajectory is one tokenized result with one completion; prompt and completion tokens
  are small integers, unique per group and per completion, so a result's tokens can be found
  in the packed rows whatever order they are in. ``shuffle_group_trajectories`` only
  reorders results within a group and is not modelled; the row shuffle is.
- Rows hold one result each, ART's ``pack_results=False`` layout. Normalization runs over the
  assistant tokens of the whole batch, and assistant tokens are never shared between results
  (pack.py L748-L758), so the row layout does not change a packed advantage.
- The fixed behaviour is 0.5.21's: a group whose rewards are all within 1e-12 of the first is
  zero-variance and gets advantage 0 (so it is dropped), and the pack divides only by a
  positive mean. The tolerance test is ``r == first or |r - first| <= 1e-12``: 0.5.21 writes
  only the second half, which is false for equal infinite rewards; both are reported.

Swappable: ``measure(pack_impl=...)`` takes ART's
``art.preprocessing.pack.packed_tensors_from_tokenized_results`` as is; it is called as
``pack_impl(results, seq_len, advantage_balance=..., pack_results=False, verbosity=0)`` with
records carrying every field that function reads from a ``TokenizedResult``. The advantage
block is inline in ``tokenize_trajectory_groups`` (a generator that needs a tokenizer and
``Trajectory`` objects), so ``measure(advantages_impl=...)`` takes a model of it with
signature ``(rewards, scale_rewards) -> list[float | None]`` (None: dropped), not ART's code.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import takewhile
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402

SEQ_LEN = 32
PROMPT_LEN = 6
COMPLETION_LENS = (3, 5, 8, 4, 6, 7, 5, 9)  # lengths differ, so the weights differ
RESIDUE_REWARDS = (0.1, 0.2, 0.3, 0.6, 0.7, 0.9, 1 / 3, 2 / 3)
RESIDUE_GROUP_SIZES = (2, 3, 4, 5, 6, 7, 8, 16)

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
    """0.5.21's test (art/utils/grpo.py), plus ``==`` so equal infinite rewards count too."""
    first = rewards[0]
    return len(rewards) <= 1 or all(r == first or abs(r - first) <= 1e-12 for r in rewards)


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


def tokenize_batch(
    groups: Sequence[Sequence[float]],
    advantages_impl: AdvantagesImpl = grpo_advantages,
    *,
    scale_rewards: bool = True,
) -> list[TokenizedRecord]:
    """Model of tokenize_trajectory_groups for one-completion trajectories (L741-L952)."""
    records: list[TokenizedRecord] = []
    for prompt_id, rewards in enumerate(groups):
        prompt = [1000 * (prompt_id + 1) + i for i in range(PROMPT_LEN)]
        group: list[TokenizedRecord] = []
        for index, advantage in enumerate(advantages_impl(rewards, scale_rewards)):
            if advantage is None:
                continue
            n = COMPLETION_LENS[index % len(COMPLETION_LENS)]
            completion = [1000 * (prompt_id + 1) + 100 * (index + 1) + k for k in range(n)]
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


def run_batch(
    groups: Sequence[Sequence[float]],
    *,
    advantage_balance: float = 0.0,
    scale_rewards: bool = True,
    advantages_impl: AdvantagesImpl = grpo_advantages,
    pack_impl: Callable[..., Any] = packed_tensors_from_tokenized_results,
) -> dict[str, Any]:
    """Tokenize and pack one ART step's groups; per group, the packed advantages it got."""
    records = tokenize_batch(groups, advantages_impl, scale_rewards=scale_rewards)
    if not records:  # local/backend.py L1049-L1050: nothing to train, the step is skipped
        return {"trained": False, "groups": {g: None for g in range(len(groups))}}
    packed = pack_impl(
        records, SEQ_LEN, advantage_balance=advantage_balance, pack_results=False, verbosity=0
    )
    tokens, advantages = packed["tokens"], packed["advantages"]
    mask = packed["assistant_mask"].to(torch.bool)
    per_group: dict[int, list[float] | None] = {g: None for g in range(len(groups))}
    for r in records:
        completion = [t for t, a in zip(r.token_ids, r.assistant_mask, strict=True) if a]
        where = torch.isin(tokens, torch.tensor(completion)) & mask
        values = [float(v) for v in advantages[where]]
        per_group[r.prompt_id] = (per_group[r.prompt_id] or []) + values
    return {
        "trained": True,
        "groups": per_group,
        "raw": {r.prompt_id: r.advantage for r in records},
        "nan_tokens": int(torch.isnan(advantages[mask]).sum()),
        "assistant_tokens": int(mask.sum()),
    }


def group_summary(values: list[float] | None) -> dict[str, Any]:
    """min/max packed advantage of a group's tokens, NaN count; None if it did not train."""
    if values is None:
        return {"tokens": 0, "min": None, "max": None, "nan": 0}
    finite = [v for v in values if not math.isnan(v)]
    return {
        "tokens": len(values),
        "min": min(finite) if finite else None,
        "max": max(finite) if finite else None,
        "nan": len(values) - len(finite),
    }


def residue_table() -> dict[int, list[float]]:
    """Group sizes and common rewards for which sum(rewards) / n is not the reward."""
    return {
        n: [round(r, 4) for r in RESIDUE_REWARDS if sum([r] * n) / n != r]
        for n in RESIDUE_GROUP_SIZES
    }


# The batches: group 0 solved by every trajectory (reward 1.0, mean exact, dropped), group 1
# an equal-reward group whose mean is not exact; then the same group next to one with a spread,
# and the NaN batch.
FULL_SCALE = ([1.0] * 8, [0.1] * 8)
MIXED = ([0.1] * 8, [0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0])
NAN_BALANCE = ([1.0] * 8, [0.7] * 8)
NEG_INF = ([-math.inf] * 4, [0.0, 1.0, 0.0, 1.0])


def measure(
    advantages_impl: AdvantagesImpl = grpo_advantages,
    pack_impl: Callable[..., Any] = packed_tensors_from_tokenized_results,
) -> dict[str, Any]:
    """The four batches through tokenize + pack, as plain data."""
    full = run_batch(FULL_SCALE, advantages_impl=advantages_impl, pack_impl=pack_impl)
    mixed = run_batch(MIXED, advantages_impl=advantages_impl, pack_impl=pack_impl)
    nan = run_batch(
        NAN_BALANCE, advantage_balance=1.0, advantages_impl=advantages_impl, pack_impl=pack_impl
    )
    inf = run_batch(NEG_INF, advantages_impl=advantages_impl, pack_impl=pack_impl)
    return {
        "full_scale": {
            "trained": full["trained"],
            "raw_advantage": full.get("raw", {}).get(1),
            "equal_group": group_summary(full["groups"][1]),
        },
        "mixed": {
            "trained": mixed["trained"],
            "equal_group": group_summary(mixed["groups"][0]),
            "spread_group": group_summary(mixed["groups"][1]),
        },
        "nan_balance": {
            "trained": nan["trained"],
            "raw_advantage": nan.get("raw", {}).get(1),
            "nan_tokens": nan.get("nan_tokens", 0),
            "assistant_tokens": nan.get("assistant_tokens", 0),
        },
        "neg_inf": {
            "trained": inf["trained"],
            "nan_tokens": inf.get("nan_tokens", 0),
            "assistant_tokens": inf.get("assistant_tokens", 0),
        },
    }


def claim_verdicts(m: dict[str, Any]) -> dict[str, bool]:
    """Per claim: an equal-reward group trains at |advantage| about 1 in the full-scale batch;
    the balance batch has NaN advantages."""
    g = m["full_scale"]["equal_group"]
    full_scale = (
        g["tokens"] > 0 and g["min"] is not None and min(abs(g["min"]), abs(g["max"])) > 0.5
    )
    return {
        "full-scale-advantage-for-equal-reward-groups": bool(full_scale),
        # NaN from the balance batch or from a group of -inf rewards, which is equal too.
        "nan-advantages": m["nan_balance"]["nan_tokens"] > 0 or m["neg_inf"]["nan_tokens"] > 0,
    }


def is_reproduced(m: dict[str, Any]) -> bool:
    """Both claims reproduced."""
    return all(claim_verdicts(m).values())


def build_report() -> _common.Report:
    """Item 3 (#1110): equal-reward groups after pack normalization."""
    cited = measure()
    fixed = measure(grpo_advantages_fixed, fixed_pack)
    report = _common.Report(
        item="3",
        title="GRPO: equal-reward groups become a full-scale advantage, or NaN, after packing",
        models="art/preprocessing/tokenize.py L741-L757, L917-L921; "
        "art/preprocessing/pack.py L323-L353",
        setting={
            "scale_rewards": True,
            "prompt tokens": PROMPT_LEN,
            "completion tokens per trajectory": list(COMPLETION_LENS),
            "full-scale batch rewards": [FULL_SCALE[0][0], FULL_SCALE[1][0]],
            "mixed batch rewards": list(map(list, MIXED)),
            "NaN batch rewards, advantage_balance=1.0": [NAN_BALANCE[0][0], NAN_BALANCE[1][0]],
            "-inf batch rewards": list(map(list, NEG_INF)),
        },
    )
    report.measure(
        "group sizes n: common rewards r with sum([r] * n) / n != r",
        residue_table(),
        note="each such group keeps a tiny advantage that is not dropped",
    )
    f, ff = cited["full_scale"], fixed["full_scale"]
    report.measure(
        "full-scale batch: advantage of each 0.1-reward trajectory before packing",
        f["raw_advantage"],
        fixed=_dropped(ff["raw_advantage"]),
        note="rewards 8 x 1.0 (dropped: mean exact) and 8 x 0.1",
    )
    report.measure(
        "full-scale batch: packed advantage of the 0.1-reward group, min..max over tokens",
        _span(f["equal_group"]),
        fixed=_span(ff["equal_group"]) if ff["trained"] else "no training step",
        audit="equal-reward groups can become a full-scale advantage signal",
        note=f"{f['equal_group']['tokens']} tokens",
    )
    m, mf = cited["mixed"], fixed["mixed"]
    report.measure(
        "mixed batch: packed advantage of the 0.1-reward group, min..max",
        _span(m["equal_group"]),
        fixed=_span(mf["equal_group"]),
        note=(
            f"next to a 0/1 group whose tokens get {_span(m['spread_group'])}, "
            f"{_span(mf['spread_group'])} with the fix"
        ),
    )
    n, nf = cited["nan_balance"], fixed["nan_balance"]
    report.measure(
        "NaN batch (advantage_balance=1.0): NaN packed advantages",
        f"{n['nan_tokens']} of {n['assistant_tokens']} tokens",
        fixed=f"{nf['nan_tokens']} of {nf['assistant_tokens']} tokens"
        + ("" if nf["trained"] else " (no training step)"),
        audit="or NaN",
        note=f"rewards 8 x 1.0 and 8 x 0.7, whose advantage is {n['raw_advantage']:.3g}",
    )
    i, fi = cited["neg_inf"], fixed["neg_inf"]
    report.measure(
        "-inf batch: NaN packed advantages",
        f"{i['nan_tokens']} of {i['assistant_tokens']} tokens",
        fixed=f"{fi['nan_tokens']} of {fi['assistant_tokens']} tokens",
        note=(
            "4 x -inf next to a 0/1 group; 0.5.21's zero-variance test alone calls the -inf "
            f"group zero-variance: {zero_variance_0521(NEG_INF[0])}"
        ),
    )
    report.note(
        "An equal-reward group trains at full scale only when nothing else in the step has a "
        "spread; next to one real group its advantage is about 1e-11 of that group's, but its "
        "tokens still count in the normalizer's mean, which here doubles the real group's "
        "advantages."
    )
    report.note(
        "NaN with finite rewards needs advantage_balance = +/-1; with the default 0 the "
        "normalizer is 0 only if every trainable advantage is 0, and exact zeros are dropped "
        "before packing. A group of -inf rewards (equal too) counts toward the NaN claim."
    )
    report.reproduced = is_reproduced(cited)
    for claim_id, hit in claim_verdicts(cited).items():
        report.claim(claim_id, hit)
    if is_reproduced(fixed):
        report.note("the suggested fix did not remove the measured effect")
    return report


def _span(g: dict[str, Any]) -> str:
    if g["tokens"] == 0:
        return "dropped"
    if g["min"] is None:
        return "all NaN"
    return f"{g['min']:.4g}..{g['max']:.4g}" + (f" ({g['nan']} NaN)" if g["nan"] else "")


def _dropped(value: float | None) -> float | str:
    return "dropped" if value is None else value


_INLINE_ADVANTAGE = "advantage /= reward_std + 1e-6"


def check_art(art: Any) -> dict[str, Any]:
    """Claim by claim against ART's code in ``art`` (see artbot's verify): pack normalization
    runs ART's own function; the GRPO advantage is inline in ``tokenize_trajectory_groups`` (a
    generator that needs a tokenizer), so which form a release has is read from its source and
    this script's model of that form is used."""
    pack = art.load("preprocessing/pack.py")
    ran = [f"{art.name}/preprocessing/pack.py:packed_tensors_from_tokenized_results"]
    tokenize = art.source("preprocessing/tokenize.py")
    if "rewards_have_zero_variance(" in tokenize:
        zero_variance = art.load("utils/grpo.py").rewards_have_zero_variance

        def advantages(rewards: Sequence[float], scale_rewards: bool) -> list[float | None]:
            # tokenize.py gives a zero-variance group advantage 0, which drops it.
            if zero_variance(list(rewards)):
                return [None] * len(rewards)
            return list(grpo_advantages(rewards, scale_rewards))

        impl: Any = advantages
        how = "ART's rewards_have_zero_variance around this script's model of the advantage"
        ran.append(f"{art.name}/utils/grpo.py:rewards_have_zero_variance")
    elif _INLINE_ADVANTAGE in tokenize:
        impl = grpo_advantages
        how = "this script's model of the inline advantage block found in tokenize.py"
    else:
        raise RuntimeError(
            f"{art.name}/preprocessing/tokenize.py computes GRPO advantages neither as audited "
            "nor with rewards_have_zero_variance"
        )
    measured = measure(impl, pack_impl=pack.packed_tensors_from_tokenized_results)
    verdicts = claim_verdicts(measured)
    group = measured["full_scale"]["equal_group"]
    trained = (
        f"the equal-reward group trains on {group['tokens']} tokens at packed advantage "
        f"{_span(group)}"
        if group["tokens"]
        else "the equal-reward group is dropped"
    )
    nan, inf = measured["nan_balance"], measured["neg_inf"]
    nan_detail = (
        f"NaN advantages with advantage_balance=1: {nan['nan_tokens']} of "
        f"{nan['assistant_tokens']} tokens; with a group of -inf rewards: {inf['nan_tokens']} of "
        f"{inf['assistant_tokens']}"
    )
    return {
        "claims": {
            "full-scale-advantage-for-equal-reward-groups": (
                verdicts["full-scale-advantage-for-equal-reward-groups"],
                f"advantages from {how}: {trained}",
            ),
            "nan-advantages": (verdicts["nan-advantages"], nan_detail),
        },
        "detail": f"advantages from {how}: {trained}; {nan_detail}",
        "ran": ran,
        "scope": "pack normalization run; the GRPO advantage block is modelled",
    }


def main() -> int:
    return _common.run(build_report)


if __name__ == "__main__":
    raise SystemExit(main())
