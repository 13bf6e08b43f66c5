"""Item 10: tinker_native normalizes advantages by the sample standard deviation.

Models two ART functions at e2a406a48 (openpipe-art 0.5.20):
- ``compute_advantages`` in ``art/tinker_native/data.py`` lines 32-44: rewards as an FP32 tensor,
  centred on the mean, divided by ``rewards_tensor.std()``, which is torch's sample (n - 1)
  standard deviation; zeros when that std is not above 1e-8.
- the GRPO advantage in ``art/preprocessing/tokenize.py`` lines 746-755, used by the other
  backends: Python floats, population (n) standard deviation, ``advantage /= reward_std + 1e-6``.

What is measured: for groups of n = 2, 4 and 8 rewards, the ratio of tinker_native's advantage to
the population-std advantage, element by element. The arithmetic says
sqrt((n - 1) / n) * (1 + 1e-6 / std_pop) (the 1e-6 is tokenize.py's guard); the audit gives 0.87
at n = 4. With the suggested fix (one convention: ``std(unbiased=False)``, as ART 0.5.21 does) the
ratio is 1 up to that guard.

Assumptions:
- ``scale_rewards`` is on in tokenize.py and ``normalize_advantages=True`` in tinker_native (their
  defaults), so both normalize.
- Rewards are either 0/1 (pass/fail) or uniform on [0, 1]; the ratio does not depend on the draw.
  Groups whose rewards are all equal have no advantage on either path and are left out.

``measure(impl=...)`` takes any callable with the signature of ART's
``compute_advantages(rewards: list[float], normalize_advantages: bool = True) -> list[float]``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

GROUP_SIZES = (2, 4, 8)
GROUPS_PER_KIND = 32
AUDIT_RATIO = {4: 0.87}


def make_compute_advantages(*, unbiased: bool) -> Callable[..., list[float]]:
    """tinker_native's ``compute_advantages``; ``unbiased=False`` is the suggested fix."""

    def compute_advantages(rewards: list[float], normalize_advantages: bool = True) -> list[float]:
        if not rewards:
            return []
        rewards_tensor = torch.tensor(rewards, dtype=torch.float32)
        centered = rewards_tensor - rewards_tensor.mean()
        if not normalize_advantages:
            return centered.tolist()
        std_reward = rewards_tensor.std(unbiased=unbiased)  # data.py#L41: std() is n - 1
        if std_reward > 1e-8:
            return (centered / std_reward).tolist()
        return [0.0] * len(rewards)

    return compute_advantages


compute_advantages = make_compute_advantages(unbiased=True)
compute_advantages_fixed = make_compute_advantages(unbiased=False)


def population_std_advantages(rewards: list[float]) -> list[float]:
    """The other backends' GRPO advantage (tokenize.py#L746-L755, ``scale_rewards=True``)."""
    reward_mean = sum(rewards) / len(rewards)
    reward_std = math.sqrt(sum((r - reward_mean) ** 2 for r in rewards) / len(rewards))
    return [(r - reward_mean) / (reward_std + 1e-6) for r in rewards]


def draw_groups(n: int, gen: torch.Generator) -> list[list[float]]:
    """Reward groups of size ``n`` with at least two distinct values: 0/1 and uniform draws."""
    groups: list[list[float]] = []
    while len(groups) < GROUPS_PER_KIND:
        binary = torch.randint(0, 2, (n,), generator=gen).to(torch.float64).tolist()
        if len(set(binary)) > 1:
            groups.append(binary)
    while len(groups) < 2 * GROUPS_PER_KIND:
        groups.append(torch.rand(n, generator=gen, dtype=torch.float64).tolist())
    return groups


def measure(
    impl: Callable[..., list[float]] | None = None,
    *,
    group_sizes: tuple[int, ...] = GROUP_SIZES,
    seed: int = 0,
) -> dict[str, Any]:
    """Per group size: each group's rewards, both advantages and their elementwise ratio.

    ``impl`` has the signature of ART's ``compute_advantages(rewards, normalize_advantages=True)``.
    """
    impl = impl or compute_advantages
    gen = _common.seed_everything(seed)
    out: dict[str, Any] = {}
    for n in group_sizes:
        groups = []
        for rewards in draw_groups(n, gen):
            tinker = impl(rewards, normalize_advantages=True)
            population = population_std_advantages(rewards)
            # Elements at the mean (advantage 0 on both paths) carry no ratio.
            ratios = [t / p for t, p in zip(tinker, population, strict=True) if abs(p) > 1e-9]
            groups.append(
                {
                    "rewards": rewards,
                    "advantages": tinker,
                    "population": population,
                    "ratios": ratios,
                }
            )
        all_ratios = torch.tensor([r for g in groups for r in g["ratios"]], dtype=torch.float64)
        out[str(n)] = {
            "groups": groups,
            "ratio_median": float(all_ratios.median()),
            "ratio_min": float(all_ratios.min()),
            "ratio_max": float(all_ratios.max()),
        }
    return out


def is_reproduced(measured: dict[str, Any]) -> bool:
    """The finding holds when the two conventions differ by more than 1% at every group size."""
    return all(abs(m["ratio_median"] - 1.0) > 0.01 for m in measured.values())


def build_report() -> _common.Report:
    """Item 10: tinker_native's advantage scale against the population-std backends."""
    as_cited = measure(compute_advantages)
    fixed = measure(compute_advantages_fixed)
    report = _common.Report(
        item="10",
        title="tinker_native uses the sample standard deviation for advantages",
        models="art/tinker_native/data.py compute_advantages (e2a406a48, lines 32-44) against "
        "art/preprocessing/tokenize.py GRPO advantages (0.5.20 lines 746-755)",
        setting={
            "group sizes n": list(GROUP_SIZES),
            "groups per n": f"{GROUPS_PER_KIND} of 0/1 rewards, {GROUPS_PER_KIND} uniform [0, 1]",
            "tinker_native": "FP32, torch.std() (n - 1), normalize_advantages=True",
            "other backends": "float64, population std (n), + 1e-6, scale_rewards=True",
        },
    )
    for n in GROUP_SIZES:
        m, f = as_cited[str(n)], fixed[str(n)]
        report.measure(
            f"n={n}: advantage ratio tinker_native / population-std (median)",
            m["ratio_median"],
            fixed=f["ratio_median"],
            audit=AUDIT_RATIO.get(n),
            note=f"range {m['ratio_min']:.6f}-{m['ratio_max']:.6f}; "
            f"sqrt((n-1)/n) = {math.sqrt((n - 1) / n):.6f}",
        )
    report.reproduced = is_reproduced(as_cited)
    return report


def main() -> int:
    return _common.run(build_report)


if __name__ == "__main__":
    raise SystemExit(main())
