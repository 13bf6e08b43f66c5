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
- The fixed behaviour is 0.5.21's structure with artbot's tolerance (the audit gives no fix): a
  zero-variance group gets advantage 0 (so it is dropped), and the pack divides only by a
  positive mean. 0.5.21 calls a group zero-variance when every reward is within 1e-12 of the
  first, which is false for equal infinite rewards (-inf - -inf is NaN) and for rewards equal by
  construction but summed in another order at rewards near 1e4 (one ulp, 1.8e-12 apart: float
  noise at that scale; ``_reward_noise``). artbot's test is ``math.isclose(r, first, rel_tol=1e-9,
  abs_tol=1e-12)``; the same edit is applied to ART's own code by ``repros/controls/item03.toml``.
- Each claim has its own batch: an exactly equal group whose mean is not exact (8 x 0.1 beside
  8 x 1.0), finite equal rewards with ``advantage_balance`` = 1 (8 x 0.7 beside 8 x 1.0), a group
  of -inf rewards beside a 0/1 group, and four rewards near 9437.6 equal by construction, one
  summed in another order, alone in its batch (artbot's test of the equality tolerance).

Swappable: ``measure(pack_impl=...)`` takes ART's
``art.preprocessing.pack.packed_tensors_from_tokenized_results`` as is; it is called as
``pack_impl(results, seq_len, advantage_balance=..., pack_results=False, verbosity=0)`` with
records carrying every field that function reads from a ``TokenizedResult``. The advantage
block is inline in ``tokenize_trajectory_groups`` (a generator that needs a tokenizer and
``Trajectory`` objects); ``measure(advantages_impl=...)`` takes any
``(rewards, scale_rewards) -> list[float | None]`` (None: dropped): this script's model, or
ART's own statements taken from a release's source (``_art_extract.advantage_block``, what
``check_art`` runs).

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

import _art_extract  # noqa: E402
import _common  # noqa: E402
import _evidence  # noqa: E402
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
    """Per claim, each from its own batch: an exactly equal group whose mean is not exact
    trains at |advantage| > 0.5 on every token (full-scale batch); finite equal rewards give
    NaN (balance batch); a group of -inf rewards gives NaN; a group equal up to float noise
    (1.8e-12, outside 0.5.21's 1e-12) trains at |advantage| > 0.5 on some token."""
    return {
        "full-scale-advantage-for-equal-reward-groups": _full_scale(
            m["full_scale"]["equal_group"], every_token=True
        ),
        "nan-advantages": m["nan_balance"]["nan_tokens"] > 0,
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
            "-inf batch rewards": list(map(list, NEG_INF)),
            "near-equal batch rewards": list(map(list, NEAR_EQUAL)),
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
    q, qf = cited["near_equal"], fixed["near_equal"]
    report.measure(
        f"near-equal batch, {NEAR_EQUAL_SHOWN}, alone: packed advantage, min..max",
        _span(q["equal_group"]),
        fixed=_span(qf["equal_group"]) if qf["trained"] else "no training step",
        note="artbot's test of the equality tolerance: rewards 1.8e-12 apart, outside 1e-12",
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


def _search_claims(advantages: AdvantagesImpl, pack_impl: Callable[..., Any]) -> dict[str, Any]:
    """Each claim's property over its part of the domain (``_grpo_property``)."""

    def step(groups: list[list[float]], advantage_balance: float = 0.0) -> dict[str, Any]:
        return run_batch(
            groups,
            advantage_balance=advantage_balance,
            advantages_impl=advantages,
            pack_impl=pack_impl,
        )

    near = list(NEAR_EQUAL[0])
    return {cid: _grpo_property.search(cid, step, near) for cid in _grpo_property.COVERS}


def check_art(art: Any) -> dict[str, Any]:
    """Claim by claim against ART's code in ``art`` (see artbot's verify), each claim from its
    own batch: the GRPO advantages are ART's own statements of ``tokenize_trajectory_groups``
    (taken from the release's source and run, ``_art_extract.advantage_block``; with 0.5.21's
    ``rewards_have_zero_variance`` loaded from ``utils/grpo.py``), and pack normalization is
    ART's ``packed_tensors_from_tokenized_results``, called with ``pack_results=False`` as
    LocalBackend does for Tinker (one result per row; the row layout changes no packed
    advantage, see the module's docstring)."""
    pack = art.load("preprocessing/pack.py")
    advantages, where = _art_extract.advantage_block(art)
    ran = [
        f"{where} (tokenize_trajectory_groups' advantage statements, from the source, run)",
        f"{art.name}/preprocessing/pack.py:packed_tensors_from_tokenized_results",
    ]
    if "rewards_have_zero_variance(" in art.source("preprocessing/tokenize.py"):
        ran.append(f"{art.name}/utils/grpo.py:rewards_have_zero_variance")
    measured = measure(advantages, pack_impl=pack.packed_tensors_from_tokenized_results)
    found = _search_claims(advantages, pack.packed_tensors_from_tokenized_results)
    verdicts = {cid: not f.holds for cid, f in found.items()}

    def trained(name: str, batch: str) -> str:
        group = measured[name]["equal_group"]
        if not group["tokens"]:
            return f"{batch}: the group is dropped"
        return f"{batch}: the group trains on {group['tokens']} tokens at {_span(group)}"

    nan, inf = measured["nan_balance"], measured["neg_inf"]
    details = {
        "full-scale-advantage-for-equal-reward-groups": trained(
            "full_scale", "8 x 1.0 and 8 x 0.1"
        ),
        "nan-advantages": f"8 x 1.0 and 8 x 0.7, advantage_balance=1: {nan['nan_tokens']} NaN "
        f"of {nan['assistant_tokens']} tokens" + ("" if nan["trained"] else " (no step)"),
        "nan-advantages-from-non-finite-rewards": f"4 x -inf next to [0, 1, 0, 1]: "
        f"{inf['nan_tokens']} NaN of {inf['assistant_tokens']} tokens",
        "full-scale-advantage-for-near-equal-reward-groups": trained(
            "near_equal", NEAR_EQUAL_SHOWN + " alone"
        )
        + f"; the same near 1.0 (1.1e-16 apart): {_within_tolerance(advantages)}"
        + _noise_by_scale(art),
    }

    first, last = (int(n) for n in where.rsplit(":", 1)[1].split("-"))
    block = _evidence.span(art, "preprocessing/tokenize.py", first, last)
    guard = _evidence.function(art, "utils/grpo.py", "rewards_have_zero_variance")
    at = [block, guard]
    dropped = [
        _evidence.lines(
            art,
            "preprocessing/tokenize.py",
            "advantage = 0.0 if zero_variance else trajectory.reward - reward_mean",
        ),
        guard,
    ]
    details = {cid: f"{found[cid].summary()}; {text}" for cid, text in details.items()}
    return {
        "claims": {
            cid: _evidence.claim(
                verdicts[cid],
                details[cid],
                method="ran",
                at=at,
                fix=dropped,
                domain=found[cid].domain(),
            )
            for cid in verdicts
        },
        "detail": "; ".join(details.values()),
        "ran": ran,
        "scope": "ART's advantage statements and pack normalization run; the tokenized records "
        "(one completion per trajectory) are artbot's",
        "method": "ran",
    }


def _within_tolerance(advantages: AdvantagesImpl) -> str:
    """The other side of the tolerance: the same construction near 1, inside 0.5.21's 1e-12."""
    rewards = _reward_noise.summed_two_ways(_reward_noise.STEPS_AT_1)
    kept = [a for a in advantages(rewards, True) if a is not None]
    return "dropped" if not kept else f"{len(kept)} of 4 trajectories kept"


def _noise_by_scale(art: Any) -> str:
    """Where the release has them, its ``rewards_have_zero_variance`` run on groups equal by
    construction at each scale, and tinker_native's ``compute_advantages`` on NEAR_EQUAL."""
    if not art.source("utils/grpo.py"):
        return ""
    guard = art.load("utils/grpo.py").rewards_have_zero_variance
    kept = _reward_noise.kept_by_scale(guard)
    out = (
        f"; ART's rewards_have_zero_variance keeps, of {_reward_noise.GROUPS} such groups "
        f"({_reward_noise.STEPS} per-step rewards summed in shuffled orders): "
        + ", ".join(f"{n} near {s:g}" for s, n in kept.items())
    )
    if art.source("tinker_native/data.py"):
        compute = art.load("tinker_native/data.py").compute_advantages
        advantages = compute(list(NEAR_EQUAL[0]))
        trained = _reward_noise.kept_by_scale(lambda g: not any(a != 0 for a in compute(g)))
        out += (
            "; tinker_native's compute_advantages on the 4 rewards near 9437.6: "
            f"[{', '.join(f'{a:.3g}' for a in advantages)}], and a nonzero advantage for "
            + ", ".join(f"{n} near {s:g}" for s, n in trained.items())
        )
    return out


if __name__ == "__main__":
    raise SystemExit(_common.run(build_report))
