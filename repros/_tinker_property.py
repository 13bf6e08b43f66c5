"""Item 9's claims as properties of ART's Tinker path (issue #37), run through
``_tinker_train.run_train`` (ART's packer and ``TinkerService.train``, ``tinker/service.py``
imported whole, with a stand-in Tinker client).

- ``one-optimizer-step-per-packed-row``: one ART step (one ``train`` call on ART's service) over
  ``n`` trajectories takes one optimizer step: the audit's fix, "accumulate forward_backward over
  rows and step once". The domain is drawn from ART's configuration (issue #50): 1-512
  trajectories a step (one GRPO group of up to 128, or several groups: a fake stepping every
  128th row gave two steps for 129), packed one per row (``pack_results=False``, the Tinker
  path's layout) or shared (``pack_results=True``, as a caller that packs would); ART's
  ``TrainConfig`` learning rates 1e-6 to 1e-4 (5e-6, its default) and ``kl_penalty_coef`` 0
  (default) or 0.01-0.1 (a fake gated on it stepped once only without a KL penalty); ``verbose``
  either way. A counterexample is an input whose step count is not 1.
- ``wrong-per-datum-masks``: with ``pack_results=True``, a group of ``branches`` (2-6)
  completions of 1-6 tokens after a prompt ART's packer shares (its minimum shared segment plus
  ``extra`` 1-32 tokens): every trainable token is scored in its own context (the record's
  Expected: each datum's mask covers its own group and its ancestors' groups and nothing else).
"""

from __future__ import annotations

import math
from typing import Any

import _domain
import _tinker_train
from _grpo_pack import TokenizedRecord

COVERS = {
    "one-optimizer-step-per-packed-row": "one train call over 1-512 trajectories (9, 128 and "
    "129 among the edges), one per packed row or shared rows; TrainConfig learning_rate "
    "1e-6-1e-4, kl_penalty_coef 0-0.1; verbose on or off -> one optimizer step",
    "wrong-per-datum-masks": "pack_results=True, 2-6 branches of 1-6 tokens after a shared "
    "prompt of the packer's minimum + 1-32 tokens -> every trainable token in its own context",
}
LEARNING_RATES = (1e-6, 5e-6, 1e-5, 1e-4)  # 5e-6: ART's TrainConfig default
KL_PENALTY_COEFS = (0.0, 0.01, 0.1)  # 0.0: ART's default
DEFAULT_CONFIG = {"learning_rate": 5e-6, "kl_penalty_coef": 0.0, "verbose": False}


def _step_case(n: int, **config: Any) -> dict[str, Any]:
    return {"completion lengths": [3] * n, "pack_results": False, **DEFAULT_CONFIG, **config}


def branch_group(prompt_len: int, lengths: list[int]) -> list[TokenizedRecord]:
    """One prompt of ``prompt_len`` tokens and one completion per entry of ``lengths``."""
    prompt = list(range(1000, 1000 + prompt_len))
    out = []
    for k, n_completion in enumerate(lengths):
        completion = [10_000 + 100 * k + i for i in range(n_completion)]
        n = prompt_len + n_completion
        out.append(
            TokenizedRecord(
                token_ids=prompt + completion,
                input_pos=list(range(n)),
                assistant_mask=[0] * prompt_len + [1] * n_completion,
                logprobs=[math.nan] * prompt_len + [-0.5] * n_completion,
                advantage=1.0 if k % 2 == 0 else -1.0,
                weight=1 / n_completion,
                prompt_id=0,
                prompt_length=prompt_len - 1,
            )
        )
    return out


def search(svc: Any, claim: str, shared: int) -> Any:
    """``claim``'s property over its domain on ART's service (``_tinker_train.loaded``):
    ``_domain.Found``."""

    def steps(case: dict[str, Any]) -> Any:
        group = branch_group(8, case["completion lengths"])
        seq_len = 8 + max(case["completion lengths"]) + 8
        run = _tinker_train.run_train(
            svc,
            group,
            seq_len,
            pack_results=case["pack_results"],
            config={k: case[k] for k in ("learning_rate", "kl_penalty_coef")},
            verbose=case["verbose"],
        )
        if run["optim_steps"] == 1:
            return None
        return _domain.Failure(
            f"{run['optim_steps']} optimizer steps for {run['packed_rows']} rows", "1"
        )

    def masks(case: dict[str, Any]) -> Any:
        prompt_len = shared + case["extra"]
        lengths = case["completion lengths"]
        seq_len = prompt_len + sum(lengths) + 8
        run = _tinker_train.run_train(
            svc, branch_group(prompt_len, lengths), seq_len, pack_results=True
        )
        wrong, total = _tinker_train.wrong_context(run)
        return _domain.Failure(f"{wrong} of {total} tokens", 0) if wrong else None

    def draw(rng: Any) -> dict[str, Any]:
        if claim == "one-optimizer-step-per-packed-row":
            count = rng.choice((rng.randint(1, 8), rng.randint(9, 128), rng.randint(129, 512)))
            return {
                "completion lengths": [rng.randint(1, 6) for _ in range(count)],
                "pack_results": rng.random() < 0.25,
                "learning_rate": rng.choice(LEARNING_RATES),
                "kl_penalty_coef": rng.choice(KL_PENALTY_COEFS),
                "verbose": rng.random() < 0.5,
            }
        return {
            "extra": rng.randint(1, 32),
            "completion lengths": [rng.randint(1, 6) for _ in range(rng.randint(2, 6))],
        }

    def shrink(case: dict[str, Any]) -> list[dict[str, Any]]:
        least = 1 if claim == "one-optimizer-step-per-packed-row" else 2
        out = [
            _domain.replace(case, "completion lengths", lengths)
            for lengths in _domain.shorter(case["completion lengths"], least)
        ]
        if case["completion lengths"] != [3] * len(case["completion lengths"]):
            out.append(
                _domain.replace(case, "completion lengths", [3] * len(case["completion lengths"]))
            )
        if "extra" in case:
            out += [_domain.replace(case, "extra", e) for e in _domain.toward_int(case["extra"], 1)]
        out += [  # toward ART's defaults
            _domain.replace(case, key, value)
            for key, value in DEFAULT_CONFIG.items()
            if key in case and case[key] != value
        ]
        return out

    edges: list[dict[str, Any]]
    if claim == "one-optimizer-step-per-packed-row":
        edges = [_step_case(n) for n in (2, 3, 9, 64, 128)] + [
            _step_case(9, kl_penalty_coef=0.1, learning_rate=1e-5, verbose=True),
            _step_case(129, pack_results=True),
        ]
        holds = steps
    else:
        edges = [{"extra": 16, "completion lengths": [3, 3]}]
        holds = masks
    return _domain.search(
        covers=COVERS[claim],
        edges=edges,
        sample=draw,
        holds=holds,
        shrink=shrink,
        # A step over up to 512 rows costs more than a masks input: fewer, larger inputs.
        max_inputs=14 if claim == "one-optimizer-step-per-packed-row" else 40,
    )
