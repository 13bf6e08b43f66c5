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
rounds to 0 in float32 for rewards below about 1e-30.

Rewards equal up to float noise (one ulp apart near 1e4) and a group of -inf rewards reach the
same symptoms through ART's equality guard, an absolute 1e-12 (0.5.21+): artbot's cases, not
the audit's claims, checked by follow-up 1001 on this same path (``item1001``'s check runs
``run_batch`` below), not counted here (issue #51: the audit's line stays the audit's).

Assumptions:

- Each trajectory is one tokenized result with one completion; prompt and completion tokens
  are small integers, unique per group and per completion, so a result's tokens can be found
  in the packed rows whatever order they are in. ``shuffle_group_trajectories`` only
  reorders results within a group and is not modelled; the row shuffle is.
- Rows hold one result each, ART's ``pack_results=False`` layout. Normalization runs over the
  assistant tokens of the whole batch, and assistant tokens are never shared between results
  (pack.py L748-L758), so the row layout does not change a packed advantage.
- The fixed behaviour is 0.5.21's structure with artbot's tolerance (the audit gives no fix): a
  zero-variance group gets advantage 0 (so it is dropped), and the pack divides only by a
  positive mean. artbot's test is ``math.isclose(r, first, rel_tol=1e-9, abs_tol=1e-12)``, which
  0.5.21's ``abs(r - first) <= 1e-12`` agrees with on exactly equal rewards (the audit's claim);
  ``repros/controls/item03.toml`` writes it into 0.5.20's code.
- Each claim has its own batch: an exactly equal group whose mean is not exact (8 x 0.1 beside
  8 x 1.0), and finite equal rewards with ``advantage_balance`` = 1 (8 x 0.7 beside 8 x 1.0).

Swappable: ``measure(pack_impl=...)`` takes ART's
``art.preprocessing.pack.packed_tensors_from_tokenized_results`` as is; it is called as
``pack_impl(results, seq_len, advantage_balance=..., pack_results=False, verbosity=0)`` with
records carrying every field that function reads from a ``TokenizedResult``;
``measure(advantages_impl=...)`` takes any ``(rewards, scale_rewards) -> list[float | None]``
(None: dropped). ``check_art`` runs neither model: it enters ART at
``tokenize_trajectory_groups`` (``tokenize.py`` imported whole, a tokenizer and trajectories
at its boundary: ``_grpo_art``) and packs with ART's packer, so a fix or a fake anywhere in
the function or a helper of its file runs as in ART (issue #50). Each claim's property is
split (issue #53): the check's process measures, artbot judges (``ORACLES``,
``_grpo_property``).

The models live beside this script and are re-exported by it: ``_grpo_tokenize`` (the
advantages, the fix, the tokenized records) and ``_grpo_pack`` (the packer); this file builds
the batches, measures them and reports.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402
import _domain  # noqa: E402
import _evidence  # noqa: E402
import _grpo_art  # noqa: E402
import _grpo_property  # noqa: E402
import _reward_noise  # noqa: E402
from _grpo_pack import (  # noqa: E402, F401 - re-exported: tests use every name
    TokenizedRecord,
    fixed_pack,
    normalize_pack,
    packed_tensors_from_tokenized_results,
)
from _grpo_tokenize import (  # noqa: E402, F401 - re-exported: tests use every name
    COMPLETION_LENS,
    PROMPT_LEN,
    AdvantagesImpl,
    grpo_advantages,
    grpo_advantages_fixed,
    tokenize_batch,
    zero_variance,
    zero_variance_0521,
)

SEQ_LEN = 32
RESIDUE_REWARDS = (0.1, 0.2, 0.3, 0.6, 0.7, 0.9, 1 / 3, 2 / 3)
RESIDUE_GROUP_SIZES = (2, 3, 4, 5, 6, 7, 8, 16)


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
# Rewards equal by construction (the same per-step rewards summed in another order) near 1e4,
# one ulp (1.8e-12) apart, just outside 0.5.21's 1e-12 tolerance, alone in the batch.
NEAR_EQUAL = (_reward_noise.summed_two_ways(_reward_noise.STEPS_AT_1E4),)
NEAR_EQUAL_SHOWN = (
    "4 rewards equal by construction near 9437.6 (one summed in another order, 1 ulp = 1.8e-12 "
    "apart)"
)


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
    near = run_batch(NEAR_EQUAL, advantages_impl=advantages_impl, pack_impl=pack_impl)
    return {
        "near_equal": {
            "trained": near["trained"],
            "raw_advantages": (advantages_impl(NEAR_EQUAL[0], True)),
            "equal_group": group_summary(near["groups"][0]),
        },
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


def _full_scale(g: dict[str, Any], *, every_token: bool) -> bool:
    """A group trains at full scale: |packed advantage| above 0.5 (on every token, or on some)."""
    if g["tokens"] == 0 or g["min"] is None:
        return False
    low, high = abs(g["min"]), abs(g["max"])
    return (min(low, high) if every_token else max(low, high)) > 0.5


def claim_verdicts(m: dict[str, Any]) -> dict[str, bool]:
    """Per claim of the audit, each from its own batch: an exactly equal group whose mean is
    not exact trains at |advantage| > 0.5 on every token (full-scale batch); finite equal
    rewards give NaN (balance batch)."""
    return {
        "full-scale-advantage-for-equal-reward-groups": _full_scale(
            m["full_scale"]["equal_group"], every_token=True
        ),
        "nan-advantages": m["nan_balance"]["nan_tokens"] > 0,
    }


def follow_up_verdicts(m: dict[str, Any]) -> dict[str, bool]:
    """Follow-up 1001's two claims on this path: a group of -inf rewards gives NaN; a group
    equal up to float noise (1.8e-12, outside 0.5.21's 1e-12) trains at |advantage| > 0.5 on
    some token."""
    return {
        "nan-advantages-from-non-finite-rewards": m["neg_inf"]["nan_tokens"] > 0,
        "full-scale-advantage-for-near-equal-reward-groups": _full_scale(
            m["near_equal"]["equal_group"], every_token=False
        ),
    }


def is_reproduced(m: dict[str, Any]) -> bool:
    """Every claim reproduced."""
    return all(claim_verdicts(m).values())


def build_report() -> _common.Report:
    """Item 3 (#1110): equal-reward groups after pack normalization."""
    cited = measure()
    fixed = measure(grpo_advantages_fixed, fixed_pack)
    report = _common.Report(
        item="3",
        title="GRPO: equal-reward groups become a full-scale advantage, or NaN, after packing",
        models="art/preprocessing/tokenize.py L741-L757, L917-L921; "
        "art/preprocessing/pack.py L323-L353 (lines as released in 0.5.20)",
        setting={
            "scale_rewards": True,
            "prompt tokens": PROMPT_LEN,
            "completion tokens per trajectory": list(COMPLETION_LENS),
            "full-scale batch rewards": [FULL_SCALE[0][0], FULL_SCALE[1][0]],
            "mixed batch rewards": list(map(list, MIXED)),
            "NaN batch rewards, advantage_balance=1.0": [NAN_BALANCE[0][0], NAN_BALANCE[1][0]],
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
    report.note(
        "An equal-reward group trains at full scale only when nothing else in the step has a "
        "spread; next to one real group its advantage is about 1e-11 of that group's, but its "
        "tokens still count in the normalizer's mean, which here doubles the real group's "
        "advantages."
    )
    report.note(
        "NaN with finite rewards needs advantage_balance = +/-1; with the default 0 the "
        "normalizer is 0 only if every trainable advantage is 0, and exact zeros are dropped "
        "before packing. Rewards equal up to float noise and equal -inf rewards: follow-up 1001."
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


def model_step(
    advantages: AdvantagesImpl = grpo_advantages,
    pack_impl: Callable[..., Any] = packed_tensors_from_tokenized_results,
) -> Callable[..., dict[str, Any]]:
    """One step on this script's models, in ``_grpo_art.step``'s form. The model packer lays
    out one result per row whatever ``pack_results`` says (the row layout changes no packed
    advantage: module doc), and its trajectories all carry logprobs, so
    ``allow_training_without_logprobs`` changes nothing."""

    def step(
        groups: list[list[float]],
        *,
        advantage_balance: float,
        scale_rewards: bool,
        pack_results: bool,
        allow_training_without_logprobs: bool,
    ) -> dict[str, Any]:
        return run_batch(
            groups,
            advantage_balance=advantage_balance,
            scale_rewards=scale_rewards,
            advantages_impl=advantages,
            pack_impl=pack_impl,
        )

    return step


def search_claims(
    claims: tuple[str, ...], step: Callable[..., dict[str, Any]], channel: Any = None
) -> dict[str, Any]:
    """Each claim's property over its part of the domain (``_grpo_property``), taped on
    ``channel`` (the check's ``art``)."""
    return {cid: _grpo_property.search(cid, channel, step) for cid in claims}


# How artbot judges each claim, outside the check's process (issue #53).
ORACLES = {cid: _grpo_property.oracle(cid) for cid in _grpo_property.AUDIT}


def where_at(art: Any) -> tuple[list[Any], list[Any]]:
    """The claims' lines (the group's advantage statements through the zero-advantage drop,
    the guard) and the fixing lines."""
    relpath = "preprocessing/tokenize.py"
    drop = "if advantage == 0 and drop_zero_advantage_trajectories:"
    block = _evidence.lines(
        art, relpath, "zero_variance = rewards_have_zero_variance(", drop
    ) or _evidence.lines(
        art,
        relpath,
        "reward_mean = sum(trajectory.reward for trajectory in group) / len(group)",
        drop,
    )
    guard = _evidence.function(art, "utils/grpo.py", "rewards_have_zero_variance")
    dropped = [
        _evidence.lines(
            art, relpath, "advantage = 0.0 if zero_variance else trajectory.reward - reward_mean"
        ),
        guard,
    ]
    return [block, guard], dropped


def first_case(art: Any, claim: str) -> str:
    """What the claim's first measured input (the record's own batch, first in the plan and
    in the edges) came to, in words."""
    entry = art.tape[claim][0]
    case, raw = entry["case"], entry["raw"]
    rewards, size = case["rewards"], case["beside size"]
    shown = f"{len(rewards)} x {_domain.short(rewards[0])}"
    shown += {"alone": "", "solved": f" and {size} x 1.0", "0/1": f" and a 0/1 group of {size}"}[
        case["beside"]
    ]
    if case["advantage_balance"]:
        shown += f", advantage_balance={case['advantage_balance']}"
    if "raised" in raw:
        return f"{shown}: raised {raw['raised']}"
    if not raw["trained"]:
        return f"{shown}: every group dropped (no step)"
    equal = raw["groups"][0]
    if equal is None:
        return f"{shown}: the group is dropped"
    bad = f", {equal['not finite']} not finite" if equal["not finite"] else ""
    return (
        f"{shown}: the group trains on {equal['tokens']} tokens, max |advantage| "
        f"{equal['max |advantage|']:.4g}{bad}"
    )


def check_art(art: Any) -> dict[str, Any]:
    """The audit's two claims against ART's code in ``art`` (see artbot's verify), each
    searched over its domain (``_grpo_property``: ART's configuration both ways, groups up to
    128) through ``_grpo_art.step``: ART's ``tokenize_trajectory_groups`` (``tokenize.py``
    imported whole, entered as LocalBackend enters it) and ART's packer; artbot judges the
    taped outputs again (``ORACLES``)."""

    def step(groups: list[list[float]], **config: Any) -> dict[str, Any]:
        return _grpo_art.step(art, groups, **config)

    with _grpo_art.loaded(art):
        found = search_claims(_grpo_property.AUDIT, step, art)
        ran = _grpo_art.ran(art)
    details = {cid: f"{found[cid].summary()}; {first_case(art, cid)}" for cid in found}
    at, dropped = where_at(art)
    return {
        "claims": {
            cid: _evidence.claim(
                not found[cid].holds,
                details[cid],
                method="ran",
                at=at,
                fix=dropped,
                domain=found[cid].domain(),
            )
            for cid in details
        },
        "detail": "; ".join(details.values()),
        "ran": ran,
        "scope": "ART's LocalBackend._prepare_training_batch run whole (local/backend.py and "
        "what it imports: the tokenizer, the packer); the trajectories (one completion each, "
        "vLLM's token ids) and the tokenizer are artbot's stand-ins",
        "method": "ran",
    }


if __name__ == "__main__":
    raise SystemExit(_common.run(build_report))
