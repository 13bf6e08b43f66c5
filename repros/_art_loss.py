"""A model of ART's token-level ``loss_fn``, shared by the reproductions of items 7 and 8.

Models ``loss_fn`` in ART's ``art/loss.py`` at e2a406a48 (openpipe-art 0.5.20, lines 263-404):

- 271-280: ``align_inputs()``, masked tokens' new and old logprobs set to 0, mask and weights;
- 288-294: NaN old logprobs replaced by the detached new ones (only NaN: -inf and sentinels such
  as -9999 pass through);
- 295-299: ``prob_ratio = torch.exp(new_logprobs - old_logprobs)``, with no clamp;
- 314-324: the epsilon defaults (PPO 0.2 / 0.2, CISPO 1.0 / 4.0);
- 363-367: PPO, ``-min(r * A, clip(r) * A)``; 368-374: CISPO, ``-(clip(r.detach()) * A * new)``;
- 375-385: truncated importance sampling (TIS): with ``original_logprobs`` the factor is
  ``clamp(exp(old - original), max=U)``; without them line 385 still multiplies by
  ``clamp(prob_ratio, max=U)``, where ``prob_ratio`` is pi_new / pi_old;
- 386-388: weights, mask, and the mean (or sum) reduction.

Two knobs apply the audit's suggested fixes; both are off by default (ART as cited):

- ``skip_tis_without_original_logprobs`` (item 7): no TIS factor when ``original_logprobs`` is
  absent, as ART 0.5.21 does (it also warns);
- ``log_ratio_bound`` (item 8): ``exp(logprob_diff.clamp(-b, b))`` at line 299. The clamp is on
  the policy ratio only, not on the TIS ratio of line 384.

Assumptions:

- Token-level importance sampling only. The model raises on ``importance_sampling_level`` other
  than ``"token"`` (lines 300-312) and on the config keys whose lines it does not contain
  (ratio clamp and mask 325-336, Kimi tau 337-338, KL penalty 339-353), rather than silently
  computing something ART would not.
- ``ref_logprobs`` is accepted and ignored: ART uses it only for the KL penalty. ``entropies``
  must be ``None``.
- Diagnostics are not modelled (``probs_corr`` 281-287, ``offpolicy_diagnostics`` 354-362,
  entropy 389-395): they do not change the loss. :class:`LossValues` carries only the two loss
  fields the reproductions read.
- Inputs are already aligned: :class:`AlignedInputs` stands in for ART's ``AlignedLossInputs``
  (lines 181-211), whose ``align_inputs`` returns itself, so no label shift is applied.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch

# Config keys whose lines the model does not contain; it refuses them.
_UNMODELLED = (
    "max_negative_advantage_importance_sampling_weight",
    "mask_prob_ratio",
    "kimi_k2_tau",
    "kl_penalty_coef",
)


@dataclass
class AlignedInputs:
    """Stand-in for ``art.loss.AlignedLossInputs``: its fields and the methods loss_fn calls."""

    assistant_mask: torch.Tensor
    old_logprobs: torch.Tensor
    advantages: torch.Tensor
    weights: torch.Tensor
    group_ids: torch.Tensor
    original_logprobs: torch.Tensor | None = None
    entropies_are_aligned: bool = False

    def align_inputs(self) -> AlignedInputs:
        return self

    def denominator(self, mask: torch.Tensor, reduction: Literal["mean", "sum"]):
        if reduction == "sum":
            return 1.0
        return mask.sum() + 1e-18

    def aligned_entropies(self, entropies: torch.Tensor | None) -> torch.Tensor | None:
        if entropies is None:
            return None
        raise NotImplementedError("entropies are not part of this reproduction")


@dataclass
class LossValues:
    """The fields of ``art.loss.Loss`` the reproductions read."""

    policy_loss: torch.Tensor
    policy_loss_sum: torch.Tensor


def make_loss_fn(
    *,
    skip_tis_without_original_logprobs: bool = False,
    log_ratio_bound: float | None = None,
) -> Callable[..., Any]:
    """The modelled ``loss_fn``, with ART's signature; the keyword arguments apply the fixes.

    ``skip_tis_without_original_logprobs`` is item 7's fix (no TIS factor without sampler
    logprobs); ``log_ratio_bound`` is item 8's (clamp new - old to +-bound before exp).
    """

    def loss_fn(
        inputs: AlignedInputs,
        new_logprobs: torch.Tensor,
        ref_logprobs: torch.Tensor | None,
        entropies: torch.Tensor | None,
        experimental_config: dict[str, Any],
        reduction: Literal["mean", "sum"] = "mean",
    ) -> LossValues:
        if experimental_config.get("importance_sampling_level", "token") != "token":
            raise ValueError("only token-level importance sampling is modelled")
        if unmodelled := [k for k in _UNMODELLED if experimental_config.get(k)]:
            raise ValueError(f"config keys not modelled: {unmodelled}")
        aligned = inputs.align_inputs()
        advantages = aligned.advantages
        mask_bool = aligned.assistant_mask.to(dtype=torch.bool)
        new_logprobs = torch.where(mask_bool, new_logprobs, new_logprobs.new_zeros(()))
        old_logprobs = aligned.old_logprobs
        old_logprobs = torch.where(mask_bool, old_logprobs, old_logprobs.new_zeros(()))
        assistant_mask = mask_bool.to(new_logprobs.dtype)
        weights = aligned.weights
        # loss.py#L288-L294: only NaN is treated as "missing"; -inf and sentinels pass through.
        old_logprobs = torch.where(torch.isnan(old_logprobs), new_logprobs.detach(), old_logprobs)
        logprob_diff = new_logprobs - old_logprobs
        if log_ratio_bound is not None:
            logprob_diff = logprob_diff.clamp(-log_ratio_bound, log_ratio_bound)
        prob_ratio = torch.exp(logprob_diff)  # loss.py#L299
        ppo = experimental_config.get("ppo", False)
        epsilon = experimental_config.get("epsilon", 0.2 if ppo else 1.0)
        epsilon_high = experimental_config.get("epsilon_high", None if ppo else 4.0)
        if epsilon_high is None:
            epsilon_high = epsilon
        if ppo:  # loss.py#L363-L367
            policy_loss = -torch.min(
                prob_ratio * advantages,
                torch.clip(prob_ratio, 1 - epsilon, 1 + epsilon_high) * advantages,
            )
        else:  # CISPO, loss.py#L368-L374
            policy_loss = -(
                torch.clip(prob_ratio.detach(), 1 - epsilon, 1 + epsilon_high)
                * advantages
                * new_logprobs
            )
        if upper_bound := experimental_config.get("truncated_importance_sampling"):
            original = aligned.original_logprobs
            if original is not None:  # loss.py#L376-L384
                original = torch.where(torch.isnan(original), new_logprobs.detach(), original)
                prob_ratio = torch.exp(old_logprobs - original)
            if original is not None or not skip_tis_without_original_logprobs:
                # loss.py#L385: without original_logprobs this is still pi_new / pi_old.
                policy_loss = policy_loss * torch.clamp(prob_ratio, max=upper_bound).detach()
        policy_loss = policy_loss * weights * assistant_mask
        denominator = aligned.denominator(assistant_mask, reduction)
        return LossValues(policy_loss.sum() / denominator, policy_loss.sum())

    return loss_fn
