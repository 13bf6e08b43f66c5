"""Item 9's claims as split properties (issues #37, #53): what the check's process measures on
ART's Tinker path, through ``_tinker_train.run_train`` (ART's packer and
``TinkerService.train``, ``tinker/service.py`` imported whole, with a stand-in Tinker client).

Each claim's inputs, its judge and its domain are ``_tinker_oracle``'s (ART-free: artbot draws
the inputs and judges again in its own process); here only the ``measure`` half, which returns
JSON values: for the step claim the ``optim_step_async`` calls and packed rows of one train
call, for the masks claim the packed rows' tokens and each datum's inputs, targets and mask (as
runs). :func:`search` runs ``_domain.search`` on them: artbot's plan when it sent one, else the
oracle's edges and draws (seed 0), and tapes every ``(case, raw)`` on ``art``.
"""

from __future__ import annotations

import math
from typing import Any

import _domain
import _tinker_oracle as oracle
import _tinker_train
from _grpo_pack import TokenizedRecord

COVERS = oracle.COVERS


def _record(tokens: list[int], prompt_length: int, k: int, prompt_id: int) -> TokenizedRecord:
    n_completion = len(tokens) - prompt_length
    return TokenizedRecord(
        token_ids=tokens,
        input_pos=list(range(len(tokens))),
        assistant_mask=[0] * prompt_length + [1] * n_completion,
        logprobs=[math.nan] * prompt_length + [-0.5] * n_completion,
        advantage=1.0 if k % 2 == 0 else -1.0,
        weight=1 / n_completion,
        prompt_id=prompt_id,
        prompt_length=prompt_length - 1,  # tokenize.py: one short of the prompt
    )


def branch_group(prompt_len: int, lengths: list[int]) -> list[TokenizedRecord]:
    """One prompt of ``prompt_len`` tokens and one completion per entry of ``lengths``."""
    prompt = list(range(1000, 1000 + prompt_len))
    return [
        _record(prompt + [10_000 + 100 * k + i for i in range(n)], prompt_len, k, 0)
        for k, n in enumerate(lengths)
    ]


def _config(case: dict[str, Any]) -> dict[str, Any]:
    return {k: case[k] for k in ("learning_rate", "kl_penalty_coef")}


def measure_steps(svc: Any) -> Any:
    """The step claim's ``measure``: one train call, its optimizer steps and packed rows."""

    def measure(case: dict[str, Any]) -> dict[str, Any]:
        lengths = case["completion lengths"]
        run = _tinker_train.run_train(
            svc,
            branch_group(8, lengths),
            oracle.packed_length(8 + max(lengths)),
            pack_results=case["pack_results"],
            config=_config(case),
            verbose=case["verbose"],
        )
        return {"optim_steps": run["optim_steps"], "packed_rows": run["packed_rows"]}

    return measure


def measure_masks(svc: Any, shared: int, *, pack_results: bool = True) -> Any:
    """The masks claim's ``measure``: ``shared`` is ART's minimum shared segment (read from its
    packer in this process); the raw facts are every packed row's tokens and datums. The claim
    packs with ``pack_results=True``; the check's detail also packs as ART's Tinker path does."""

    def measure(case: dict[str, Any]) -> dict[str, Any]:
        prompt_length = shared + case["extra"]
        records = [
            _record(seq, prompt_length, k, g)
            for g, group in enumerate(oracle.sequences(case, prompt_length))
            for k, seq in enumerate(group)
        ]
        longest = max(len(r.token_ids) for r in records)
        run = _tinker_train.run_train(
            svc,
            records,
            oracle.packed_length(longest),
            pack_results=pack_results,
            config=_config(case),
            verbose=case["verbose"],
        )
        return {"shared": shared, "rows": [_row(row) for row in run["rows"]]}

    return measure


def _row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "tokens": oracle.runs(row["tokens"].tolist()),
        "datums": [
            {
                "input": oracle.runs([int(t) for t in tokens]),
                "target": oracle.runs([int(t) for t in _tolist(target)]),
                "writes": oracle.runs(mask.nonzero().flatten().tolist()),
            }
            # zip as custom_loss_fn pairs masks with the datums' logprobs: to the shorter
            for tokens, target, mask in zip(
                row["inputs"], row["targets"], row["masks"], strict=False
            )
        ],
    }


def _tolist(values: Any) -> list[Any]:
    return values.tolist() if hasattr(values, "tolist") else list(values)


def search(svc: Any, claim: str, shared: int, channel: Any = None) -> _domain.Found:
    """``claim``'s property on ART's service (``_tinker_train.loaded``): the inputs artbot
    planned on ``channel`` (``art``), else the oracle's edges and draws; taped on ``channel``."""
    spec = oracle.ORACLES[claim]
    edges = spec.edges() if spec.edges is not None else []
    measure = measure_steps(svc) if claim == oracle.STEPS else measure_masks(svc, shared)
    assert spec.sample is not None
    return _domain.search(
        covers=COVERS[claim],
        claim=claim,
        channel=channel,
        measure=measure,
        judge=spec.judge,
        edges=edges,
        sample=spec.sample,
        shrink=oracle.shrink(claim),
        max_inputs=len(edges) + spec.draws,
    )
