"""A model of ART's token-level ``loss_fn``, shared by the reproductions of items 7 and 8.

Models ``loss_fn`` of ART's ``art/loss.py`` as released in openpipe-art 0.5.20 (lines 263-404).
The audit's commit e2a406a48 is in no release (it lies between 0.5.20 and 0.5.21); its loss.py
anchors sit at the audit's lines in 0.5.20, so 0.5.20's function is the one modelled:

- 271-280: ``align_inputs()``, masked tokens' new and old logprobs set to 0, mask and weights;
- 288-294: NaN old logprobs replaced by the detached new ones (only NaN: -inf and sentinels such
  as -9999 pass through);
- 295-299: ``prob_ratio = torch.exp(new_logprobs - old_logprobs)``, with no clamp;
- 314-324: the epsilon defaults (PPO 0.2 / 0.2, CISPO 1.0 / 4.0: :data:`EPSILON_DEFAULTS`, which
  artbot's tests compare with each release's source);
- 363-367: PPO, ``-min(r * A, clip(r) * A)``; 368-374: CISPO, ``-(clip(r.detach()) * A * new)``;
- 375-385: truncated importance sampling (TIS): with ``original_logprobs`` the factor is
  ``clamp(exp(old - original), max=U)``; without them line 385 still multiplies by
  ``clamp(prob_ratio, max=U)``, where ``prob_ratio`` is pi_new / pi_old;
- 386-388: weights, mask, and the mean (or sum) reduction.

Three knobs apply the fixes; all are off by default (ART 0.5.20):

- ``skip_tis_without_original_logprobs`` (item 7): no TIS factor when ``original_logprobs`` is
  absent, as ART 0.5.21 does (loss.py L388-L395; it also warns);
- ``log_ratio_bound`` (item 8): ``exp(logprob_diff.clamp(-b, b))`` at line 299, as 0.5.21 does
  with b = 20 for FP32 (L301-L302). The clamp is on the policy ratio only, not on the TIS ratio
  of line 384;
- ``replace_non_finite_old_logprobs`` (item 8): the fallback of lines 288-294 applied to every
  non-finite old logprob, not only NaN, as 0.5.21 does (``~torch.isfinite``, L291-L295).

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

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch

# What items 7 and 8 measure: any callable with the signature of ART's ``loss_fn(inputs,
# new_logprobs, ref_logprobs, entropies, experimental_config, reduction="mean")`` that returns an
# object with ``.policy_loss`` (the only field read), so ART's own function can be passed in and
# given the same inputs as the model.
LossFn = Callable[..., Any]

# loss.py L314-L324 (0.5.20): (epsilon, epsilon_high) when the config sets neither; None means
# epsilon_high = epsilon. PPO clips the ratio to [0.8, 1.2], CISPO to [0, 5].
EPSILON_DEFAULTS: dict[str, tuple[float, float | None]] = {"ppo": (0.2, None), "cispo": (1.0, 4.0)}

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
    replace_non_finite_old_logprobs: bool = False,
) -> Callable[..., Any]:
    """The modelled ``loss_fn``, with ART's signature; the keyword arguments apply the fixes.

    ``skip_tis_without_original_logprobs`` is item 7's fix (no TIS factor without sampler
    logprobs); ``log_ratio_bound`` and ``replace_non_finite_old_logprobs`` are item 8's (clamp
    new - old to +-bound before exp; treat -inf and +inf old logprobs like NaN ones).
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
        missing = ~torch.isfinite(old_logprobs) if replace_non_finite_old_logprobs else None
        if missing is None:
            missing = torch.isnan(old_logprobs)
        old_logprobs = torch.where(missing, new_logprobs.detach(), old_logprobs)
        logprob_diff = new_logprobs - old_logprobs
        if log_ratio_bound is not None:
            logprob_diff = logprob_diff.clamp(-log_ratio_bound, log_ratio_bound)
        prob_ratio = torch.exp(logprob_diff)  # loss.py#L299
        ppo = experimental_config.get("ppo", False)
        epsilon_default, epsilon_high_default = EPSILON_DEFAULTS["ppo" if ppo else "cispo"]
        epsilon = experimental_config.get("epsilon", epsilon_default)
        epsilon_high = experimental_config.get("epsilon_high", epsilon_high_default)
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


def epsilon_defaults_in(source: str) -> tuple[dict[str, tuple[float, float | None]], int, int]:
    """The clip defaults a release's ``loss.py`` sets, read (not run) from its source: the
    ``if ppo: ... else: ...`` in ``loss_fn`` that assigns ``epsilon_default`` and
    ``epsilon_high_default``; with its first and last line. Raises LookupError when absent."""
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name)):
            continue
        if node.test.id != "ppo":
            continue
        branches = {"ppo": _constants(node.body), "cispo": _constants(node.orelse)}
        if all("epsilon_default" in b and "epsilon_high_default" in b for b in branches.values()):
            found = {
                k: (float(b["epsilon_default"]), _float(b["epsilon_high_default"]))
                for k, b in branches.items()
            }
            return found, node.lineno, node.end_lineno or node.lineno
    raise LookupError("no `if ppo:` assigning epsilon_default / epsilon_high_default")


def _constants(body: list[ast.stmt]) -> dict[str, Any]:
    out = {}
    for stmt in body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Constant)
        ):
            out[stmt.targets[0].id] = stmt.value.value
    return out


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
