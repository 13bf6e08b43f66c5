"""Item 9's claims, ART-free (issue #53): the inputs artbot draws for each claim and the judge
of what ART's Tinker path did on them. Nothing here imports ART or torch: artbot runs
``ORACLES`` in its own process, on the ``(case, raw)`` pairs the check's process taped.

- ``one-optimizer-step-per-packed-row``: one ART step (one ``train`` call on ART's service) over
  ``n`` trajectories takes one optimizer step: the audit's fix, "accumulate forward_backward over
  rows and step once". The domain is drawn from ART's configuration (issue #50): 1-512
  trajectories a step (one GRPO group of up to 128, or several groups: a fake stepping every
  128th row gave two steps for 129), packed one per row (``pack_results=False``, the Tinker
  path's layout) or shared (``pack_results=True``, as a caller that packs would); ART's
  ``TrainConfig`` learning rates 1e-6 to 1e-4 (5e-6, its default) and ``kl_penalty_coef`` 0
  (default) or 0.01-0.1 (a fake gated on it stepped once only without a KL penalty); ``verbose``
  either way. The raw fact: the ``optim_step_async`` calls ART made in the call (and the rows
  it packed); a counterexample is an input whose step count is not 1.
- ``wrong-per-datum-masks``: with ``pack_results=True``, 1-8 GRPO groups packed together, each of
  ``branches`` (2-6) completions of 1-512 tokens after a prompt ART's packer shares (its minimum
  shared segment plus ``extra`` 1-32 tokens), over the same ``TrainConfig`` values: every
  trainable token is scored in its own context (the record's Expected: each datum's mask covers
  its own group and its ancestors' groups and nothing else). The raw facts, per packed row: its
  tokens, and per datum ART sent Tinker its ``model_input`` tokens, its ``target_tokens`` and
  the row positions ART's ``custom_loss_fn`` writes its logprobs back to (the datum's mask), as
  runs (:func:`runs`). The judge knows every sequence from the case alone (token ids say which
  group, branch and place), so it trusts nothing of ART's packer: a completion token at row
  position ``u`` is scored by the logprob at ``u - 1`` (ART's loss shifts by one), which the
  last datum whose mask covers ``u - 1`` writes (``logprobs[mask] = lp`` in datum order); that
  logprob is Tinker's for the datum's target there given its inputs up to there, which must be
  the token's own sequence up to it, and the token itself.

Rows are as long as ART makes them: LocalBackend's ``_get_packed_tensors`` rounds the longest
sequence up to a multiple of 2048 (``local/backend.py`` 0.5.20 L1078, 0.5.23 L1068), so every
row here is 2048 tokens (:func:`packed_length`), never shortened to the sequences' length.
"""

from __future__ import annotations

import math
import random
from typing import Any

import _domain

STEPS = "one-optimizer-step-per-packed-row"
MASKS = "wrong-per-datum-masks"
COVERS = {
    STEPS: "one train call over 1-512 trajectories (9, 128 and 129 among the edges), one per "
    "packed row or shared rows; TrainConfig learning_rate 1e-6-1e-4, kl_penalty_coef 0-0.1; "
    "verbose on or off; rows of ART's packed length (2048) -> one optimizer step",
    MASKS: "pack_results=True, 2-6 branches of 1-512 tokens after a shared prompt of the packer's "
    "minimum + 1-32 tokens; 1-8 groups packed in rows of ART's packed length (2048); TrainConfig "
    "learning_rate 1e-6-1e-4, kl_penalty_coef 0-0.1, verbose on or off -> every trainable token "
    "in its own context",
}
LEARNING_RATES = (1e-6, 5e-6, 1e-5, 1e-4)  # 5e-6: ART's TrainConfig default
KL_PENALTY_COEFS = (0.0, 0.01, 0.1)  # 0.0: ART's default
DEFAULT_CONFIG = {"learning_rate": 5e-6, "kl_penalty_coef": 0.0, "verbose": False}
CONFIG_DIMENSIONS: dict[str, tuple[Any, ...]] = {
    "learning_rate": LEARNING_RATES,
    "kl_penalty_coef": KL_PENALTY_COEFS,
    "verbose": (False, True),
}
STEP_DRAWS, MASK_DRAWS = 7, 24
ROW_MULTIPLE = 2048  # local/backend.py: ceil(max_tokens / 2048) * 2048


def packed_length(longest: int) -> int:
    """The row length ART's LocalBackend packs ``longest``-token sequences into."""
    return math.ceil(longest / ROW_MULTIPLE) * ROW_MULTIPLE


# Token ids that say what they are: group g's prompt token p is 100_000 (g + 1) + p, its
# branch k's completion token i is 100_000 (g + 1) + 10_000 (k + 1) + i. Padding is 0.
def prompt_tokens(group: int, length: int) -> list[int]:
    return [100_000 * (group + 1) + p for p in range(length)]


def completion_tokens(group: int, branch: int, length: int) -> list[int]:
    return [100_000 * (group + 1) + 10_000 * (branch + 1) + i for i in range(length)]


def sequences(case: dict[str, Any], prompt_length: int) -> list[list[list[int]]]:
    """Per group, per branch: the whole sequence (prompt, then completion) of a masks case."""
    return [
        [
            prompt_tokens(g, prompt_length) + completion_tokens(g, k, n)
            for k, n in enumerate(case["completion lengths"])
        ]
        for g in range(case["groups"])
    ]


# --- the step claim -------------------------------------------------------------------------


def step_case(n: int, **config: Any) -> dict[str, Any]:
    return {"completion lengths": [3] * n, "pack_results": False, **DEFAULT_CONFIG, **config}


def step_edges() -> list[dict[str, Any]]:
    """ART's defaults at the sizes that matter (9: #50's counterexample; 128, a GRPO group of
    128; 129, past it; 512), shared rows at the largest, and a covering array of ART's
    ``TrainConfig`` values, ``pack_results`` and sizes (every pair of values in some input)."""
    sizes = [step_case(n) for n in (1, 2, 9, 128, 129, 512)]
    sizes.append(step_case(512, pack_results=True))
    pairs = _domain.pairwise_cases(
        {"trajectories": (2, 9, 129), "pack_results": (False, True), **CONFIG_DIMENSIONS}
    )
    return sizes + [step_case(c.pop("trajectories"), **c) for c in pairs]


def step_sample(rng: random.Random) -> dict[str, Any]:
    count = rng.choice((rng.randint(1, 8), rng.randint(9, 128), rng.randint(129, 512)))
    return {
        "completion lengths": [rng.randint(1, 6) for _ in range(count)],
        "pack_results": rng.random() < 0.25,
        "learning_rate": rng.choice(LEARNING_RATES),
        "kl_penalty_coef": rng.choice(KL_PENALTY_COEFS),
        "verbose": rng.random() < 0.5,
    }


def step_judge(case: dict[str, Any], raw: Any) -> _domain.Failure | None:
    """One optimizer step for the train call, however many rows."""
    steps = raw.get("optim_steps") if isinstance(raw, dict) else None
    if type(steps) is int and steps == 1:
        return None
    if type(steps) is not int:
        return _domain.Failure(f"no step count: {str(raw)[:60]}", "1")
    return _domain.Failure(f"{steps} optimizer steps for {raw.get('packed_rows')} rows", "1")


# --- the masks claim ------------------------------------------------------------------------


def mask_case(extra: int, lengths: list[int], groups: int = 1, **config: Any) -> dict[str, Any]:
    return {
        "extra": extra,
        "completion lengths": lengths,
        "groups": groups,
        **DEFAULT_CONFIG,
        **config,
    }


def mask_edges() -> list[dict[str, Any]]:
    """The audit's two-branch group (a prompt 16 tokens past the packer's minimum), then a
    covering array of the shape (prompt, branches, their lengths, groups a row) and ART's
    ``TrainConfig`` values; its first input takes every dimension's maximum."""
    pairs = _domain.pairwise_cases(
        {
            "extra": (1, 16, 32),
            "branches": (2, 3, 6),
            "length": (1, 6, 512),
            "groups": (1, 2, 8),
            **CONFIG_DIMENSIONS,
        }
    )
    cases = [mask_case(16, [3, 3])]
    for c in pairs:
        lengths = [c.pop("length")] * c.pop("branches")
        cases.append(mask_case(c.pop("extra"), lengths, c.pop("groups"), **c))
    return cases


def mask_sample(rng: random.Random) -> dict[str, Any]:
    return mask_case(
        rng.randint(1, 32),
        [_completion_length(rng) for _ in range(rng.randint(2, 6))],
        rng.randint(1, 8),
        learning_rate=rng.choice(LEARNING_RATES),
        kl_penalty_coef=rng.choice(KL_PENALTY_COEFS),
        verbose=rng.random() < 0.5,
    )


def _completion_length(rng: random.Random) -> int:
    """A completion's tokens: a few (the audit's rows), tens, or hundreds (a realistic reply)."""
    return rng.choice((rng.randint(1, 6), rng.randint(7, 64), rng.randint(65, 512)))


def mask_judge(case: dict[str, Any], raw: Any) -> _domain.Failure | None:
    """Every completion token scored on its own sequence up to it, and on itself as the target.
    Raw facts that cannot be read as measured fail: what the code under test sends decides
    nothing by being malformed."""
    try:
        wrong, total = wrong_context(case, raw)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        return _domain.Failure(f"raw facts unreadable ({type(e).__name__})", "rows of runs")
    return _domain.Failure(f"{wrong} of {total} tokens", 0) if wrong else None


def wrong_context(case: dict[str, Any], raw: dict[str, Any]) -> tuple[int, int]:
    """Completion tokens not scored in their own context (or not at all), and all of them."""
    if _decoded_size(raw) > MAX_DECODED:
        raise ValueError(f"raw facts decode past {MAX_DECODED} values")
    # A shrunk case on the tape is the check's process's choice: bound what it makes us build.
    lengths, groups = case["completion lengths"], case["groups"]
    if (
        groups * (int(raw["shared"]) + int(case["extra"]) + sum(lengths)) * len(lengths)
        > MAX_DECODED
    ):
        raise ValueError("a case past the claim's domain")
    rows: list[dict[str, Any]] = [
        {
            "tokens": decode(r["tokens"]),
            "datums": [
                {
                    "input": decode(d["input"]),
                    "target": decode(d["target"]),
                    "writes": {p: j for j, p in enumerate(decode(d["writes"]))},
                }
                for d in r["datums"]
            ],
        }
        for r in raw["rows"]
    ]
    where: dict[int, list[tuple[int, int]]] = {}
    for r, row in enumerate(rows):
        for u, token in enumerate(row["tokens"]):
            if token >= 100_000:  # a prompt or completion token, not padding
                where.setdefault(token, []).append((r, u))
    prompt_length = int(raw["shared"]) + int(case["extra"])
    agree: dict[tuple[int, ...], int] = {}  # (row, datum, group, branch) -> common prefix
    wrong = total = 0
    for g, group in enumerate(sequences(case, prompt_length)):
        for k, seq in enumerate(group):
            for i in range(prompt_length, len(seq)):
                total += 1
                places = where.get(seq[i], [])
                if not places or not all(_own(rows, r, u, g, k, seq, i, agree) for r, u in places):
                    wrong += 1
    return wrong, total


def _own(
    rows: list[dict[str, Any]],
    r: int,
    u: int,
    g: int,
    k: int,
    seq: list[int],
    i: int,
    agree: dict[tuple[int, ...], int],
) -> bool:
    """Whether the logprob that scores row ``r``'s position ``u`` (the token ``seq[i]``) was
    computed on ``seq[:i]`` with ``seq[i]`` as its target: the last datum whose mask covers
    ``u - 1`` writes it (custom_loss_fn: ``logprobs[mask] = lp`` in datum order), from its
    ``j``-th logprob, where ``u - 1`` is its mask's ``j``-th position."""
    t = u - 1
    writers = [d for d, datum in enumerate(rows[r]["datums"]) if t in datum["writes"]]
    if t < 0 or not writers:
        return False
    datum = rows[r]["datums"][writers[-1]]
    j = datum["writes"][t]
    key = (r, writers[-1], g, k)
    if key not in agree:  # once per datum and sequence, not once per token
        agree[key] = _common_prefix(datum["input"], seq)
    target = datum["target"][j] if j < len(datum["target"]) else None
    return j + 1 == i and agree[key] >= i and target == seq[i]


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def shrink(claim: str) -> Any:
    """Simpler inputs of ``claim``'s domain, toward ART's defaults and the smallest sizes."""

    def simpler(case: dict[str, Any]) -> list[dict[str, Any]]:
        lengths = case["completion lengths"]
        out = [
            _domain.replace(case, "completion lengths", shorter)
            for shorter in _domain.shorter(lengths, 1 if claim == STEPS else 2)
        ]
        if lengths != [3] * len(lengths):
            out.append(_domain.replace(case, "completion lengths", [3] * len(lengths)))
        for key, target in (("groups", 1), ("extra", 1)):
            if key in case:
                out += [
                    _domain.replace(case, key, v) for v in _domain.toward_int(case[key], target)
                ]
        out += [
            _domain.replace(case, key, value)
            for key, value in DEFAULT_CONFIG.items()
            if case.get(key, value) != value
        ]
        return out

    return simpler


ORACLES = {
    STEPS: _domain.Oracle(judge=step_judge, edges=step_edges, sample=step_sample, draws=STEP_DRAWS),
    MASKS: _domain.Oracle(judge=mask_judge, edges=mask_edges, sample=mask_sample, draws=MASK_DRAWS),
}


# --- runs: a row's tokens and a datum's positions as short JSON ------------------------------


def runs(values: list[int]) -> list[list[int]]:
    """``values`` as ``[first, count, step]`` runs (0, 1, ..., 9 is ``[[0, 10, 1]]``; eight
    padding zeros ``[[0, 8, 0]]``): lossless, a few numbers a segment."""
    out: list[list[int]] = []
    for v in values:
        if out:
            first, count, step = out[-1]
            if count == 1 and v - first in (0, 1):
                out[-1] = [first, 2, v - first]
                continue
            if count > 1 and v == first + count * step:
                out[-1][1] += 1
                continue
        out.append([v, 1, 0])
    return out


def decode(spans: list[list[int]]) -> list[int]:
    """The values of :func:`runs`; a ValueError for anything but integer triples (the judge
    reads what the code under test sent)."""
    out = [first + i * step for first, count, step in spans for i in range(count)]
    if not all(type(v) is int for v in out):
        raise ValueError("runs of integers expected")
    return out


# Values one masks input's raw facts may decode to: ten times the largest measured (0.5.20's
# masks on the widest edge: 16 rows, 366,368 values), so a raw fact cannot exhaust the judge.
MAX_DECODED = 4_000_000


def _decoded_size(raw: dict[str, Any]) -> int:
    lists = [row["tokens"] for row in raw["rows"]]
    lists += [
        d[key]
        for row in raw["rows"]
        for d in row["datums"]
        for key in ("input", "target", "writes")
    ]
    counts = [count for spans in lists for _, count, _ in spans]
    if not all(type(c) is int and c >= 0 for c in counts):
        raise ValueError("run lengths are counts")
    return sum(counts)
