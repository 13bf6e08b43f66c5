"""ART's loss path, entered where it runs on a CPU, for items 7, 8 and 801 (issue #50).

ART calls ``loss_fn`` (``art/loss.py``) from three places, all 0.5.20-0.5.23:

- ``unsloth/train.py`` ``compute_loss``: ``loss_fn(LossInputs(inputs=inputs), new_logprobs,
  ref_logprobs, entropies, _config)``, the default ``reduction="mean"``. Its reference model
  runs under ``torch.inference_mode()``, but ``_calculate_logprobs`` makes the logprobs outside
  it (``torch.empty``, then writes), so ``loss_fn`` gets ordinary FP32 tensors; with
  ``precalculate_logprobs`` the sampler's logprobs become ``original_logprobs`` and the old
  ones the trainer's (not in this domain: the packer writes no ``original_logprobs``);
- ``tinker/service.py`` ``custom_loss_fn``: ``loss_fn(LossInputs(inputs=inputs),
  logprobs.unsqueeze(0), None, None, _config)``, ``reduction="mean"``;
- ``megatron/train.py`` ``reduce_loss``: ``loss_fn(compact_loss_inputs, ...,
  reduction="sum")``.

Each caller's ``inputs`` is one packed row, ``create_train_inputs(packed_tensors, i, ...)``
(``preprocessing/inputs.py``) of what ART's packer made (``preprocessing/pack.py``
``packed_tensors_from_tokenized_results``). :func:`run_step` runs a GRPO group (one prompt, 1-8
completions) packed into one row of 16 to 8,192 tokens by ART's packer (``branches``, ``row
tokens``) and hands every row to the case's ``caller``, a dimension of the domain whose
reduction is the caller's (``_loss_callers``): Unsloth's ``compute_loss`` and Tinker's
``TinkerService.train`` (its ``custom_loss_fn``) are run, their modules imported whole with
stand-ins only at the boundary (the trainer and model, Tinker's client); Megatron's
``reduce_loss`` cannot run without Megatron-Core (``_loss_callers.NOT_RUN``), so its call is
made at ``loss_fn`` with its arguments. A fix or a fake anywhere on that path (the packer,
``create_train_inputs``, ``LossInputs.align_inputs``, ``loss_fn`` and any helper of its file,
``unsloth/train.py``, ``tinker/service.py``) is run as ART runs it; one in ``megatron/train.py``
is not seen (:data:`CALL_PATH` says so).
ART compiles nothing on this path: ``torch.compile`` wraps Megatron's transformer layers
(``megatron/training/compile.py``) and flex attention (``megatron/flex_attn/compiled.py``),
never ``loss_fn`` or what feeds it, so the steps run eagerly, as in ART.

The new logprobs are a model's: a table of logits per previous token (``VOCAB`` x ``VOCAB``),
so each token's new logprob depends on its context as the packer laid it out; the sampler's
(old) logprobs are the same values in FP32 plus a small drift, as a sampler one step behind
gives them. The domain (:data:`CONFIG_VALUES`, :data:`PATH_VALUES`) is every dev.TrainConfig
value loss_fn reads (each key found by running it: :func:`config_keys_read`), the three
callers, the model's dtype FP32/BF16/FP16 (Unsloth's ``_calculate_logprobs`` and Tinker give
``loss_fn`` FP32 logprobs of it; Megatron's head gives them in its dtype; old logprobs are
always FP32: the packer's ``logprobs`` tensor), grad on and off, and rows up to 8,192
tokens, every call one packed row ([1, tokens]) as every caller passes it. The inputs are a
covering array (every pair of values in some input: :func:`_domain.pairwise_cases`) plus random
draws; every dimension reaches its maximum in some input.
"""

from __future__ import annotations

import math
import random
import warnings
from dataclasses import dataclass
from typing import Any

import _domain
import _evidence
import _loss_callers as callers_
import torch
from _grpo_pack import TokenizedRecord

VOCAB = 16
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
Case = dict[str, Any]
ROW_MAX = 8192  # ART's packed rows: 8,192 tokens (packed_sequence_length's usual value)
UNSLOTH_LONG = 1024  # past this, an Unsloth step's attention bias is its cost

CALL_PATH = (
    "ART's packer -> create_train_inputs -> each caller: Unsloth's compute_loss and Tinker's "
    "custom_loss_fn (TinkerService.train) run whole (stand-ins: trainer, model, Tinker "
    "client), mean; "
    "Megatron's reduce_loss not run (needs Megatron-Core's schedule): loss_fn, sum, the "
    "selective LM head's compacted inputs (ART's default, on odd seeds) or LossInputs; "
    "nothing compiled"
)

# Where ART calls loss_fn (file, the call's first line): the verdict's "at" shows each call.
CALLERS = (
    ("unsloth/train.py", "loss = loss_fn("),
    ("tinker/service.py", "loss = loss_fn("),
    ("megatron/train.py", "loss_info = loss_fn("),
)


def call_sites(art: Any) -> list[dict[str, Any] | None]:
    """Each caller's ``loss_fn(...)`` call in this release, with its arguments (the reduction),
    as ``_evidence`` finds it (None where the release has no such call)."""
    return [_evidence.lines(art, relpath, first) for relpath, first in CALLERS]


# Every value of each dev.TrainConfig key loss_fn reads that this domain varies; None: the key
# is left out of the config (ART's default). A key loss_fn reads that is not here is named in
# the verdict as not varied.
CONFIG_VALUES: dict[str, tuple[Any, ...]] = {
    "ppo": (True, False),
    "importance_sampling_level": ("token", "sequence", "average", "geometric_average"),
    "epsilon": (None, 0.1, 0.3),
    "epsilon_high": (None, 0.28, 4.0),
    "truncated_importance_sampling": (None, 2.0, 2),
    "max_negative_advantage_importance_sampling_weight": (None, 3.0),
    "mask_prob_ratio": (None, True),
    "kimi_k2_tau": (None, 0.1),
    "kl_penalty_coef": (None, 0.1),
    "kl_penalty_source": (None, "sample", "current_learner"),
}
# The path's own dimensions: the caller of loss_fn (its reduction is the caller's), the model's
# dtype, whether the logits need a gradient (a backward is run), and the row's size.
PATH_VALUES: dict[str, tuple[Any, ...]] = {
    # Megatron's first: the simplest (shrinking goes there), and Unsloth's full attention bias
    # (rows x rows) makes its steps the slowest.
    "caller": ("megatron", "tinker", "unsloth"),
    "new dtype": ("fp32", "bf16", "fp16"),
    "grad": (True, False),
    "row tokens": (16, 1024, ROW_MAX),
    "branches": (1, 2, 8),
}


class _Reads(dict):  # type: ignore[type-arg]
    """A config that records the keys read from it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read: list[str] = []

    def get(self, key: Any, default: Any = None) -> Any:
        self.read.append(key)
        return super().get(key, default)

    def __getitem__(self, key: Any) -> Any:
        self.read.append(key)
        return super().__getitem__(key)


@dataclass
class Path:
    """ART's modules on the path, loaded whole from the tree under test."""

    loss: Any
    pack: Any
    inputs: Any
    types: Any
    callers: callers_.Callers | None = None
    # megatron/selective_lm_head.py (its Megatron-Core import stood in for), loaded with the
    # callers: Megatron's reduce_loss passes loss_fn the head's compacted inputs.
    selective: Any = None

    @classmethod
    def load(cls, art: Any, callers: callers_.Callers | None = None) -> Path:
        return cls(
            art.load("loss.py"),
            art.load("preprocessing/pack.py"),
            art.load("preprocessing/inputs.py"),
            art.load("types.py"),
            callers,
            None if callers is None else callers.whole.load("megatron/selective_lm_head.py"),
        )


def config_keys_read(path: Path) -> list[str]:
    """The config keys ``loss_fn`` reads, found by running it on one ordinary step (with KL on
    and a reference, so the KL keys are reached)."""
    config = _Reads(kl_penalty_coef=0.1)
    run_step(path, base_case(caller="megatron", kl_penalty_coef=0.1), config=config)
    return list(dict.fromkeys(k for k in config.read if isinstance(k, str)))


def base_case(**over: Any) -> dict[str, Any]:
    """An ordinary step: PPO at the token level, Megatron's call (reduction sum), FP32, one row
    of 16 tokens (a prompt of 4, two completions of 6), A = -1 and +1, grad on, no bad old
    logprob."""
    case: dict[str, Any] = {k: v[0] for k, v in CONFIG_VALUES.items()}
    case.update({k: v[0] for k, v in PATH_VALUES.items()})
    case.update({"branches": 2, "advantage": 1.0, "at": 0, "seed": 0})
    case.update(over)
    return case


def config_of(case: dict[str, Any]) -> dict[str, Any]:
    """The ``dev.TrainConfig`` a case passes (keys whose value is None are left out)."""
    return {k: case[k] for k in CONFIG_VALUES if case.get(k) is not None}


def _layout(case: dict[str, Any]) -> tuple[int, int, int]:
    """(prompt, completion) lengths filling the row with one prompt and ``branches``
    completions (ART's prefix-tree packer stores a shared prompt once), and the branch count."""
    row, branches = case["row tokens"], case["branches"]
    prompt = max(2, min(row // 8, 1024))
    completion = max(2, (row - prompt) // branches)
    while prompt + branches * completion > row and completion > 2:
        completion -= 1
    return prompt, completion, branches


def _table(seed: int, grad: bool) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return (2.0 * torch.randn(VOCAB, VOCAB, generator=gen)).requires_grad_(grad)


def _records(case: dict[str, Any], table: torch.Tensor, bad: float | None) -> list[TokenizedRecord]:
    """One GRPO group: a prompt and ``branches`` completions; old logprobs the model's in FP32
    plus a drift; completion token ``at`` of branch 0 gets ``bad`` (None: its own value)."""
    prompt_len, completion_len, branches = _layout(case)
    gen = torch.Generator().manual_seed(case["seed"] + 1)
    prompt = torch.randint(0, VOCAB, (prompt_len,), generator=gen)
    reference = torch.log_softmax(table.detach().double(), -1)
    out = []
    for k in range(branches):
        ids = torch.cat([prompt, torch.randint(0, VOCAB, (completion_len,), generator=gen)])
        exact = reference[ids[prompt_len - 1 : -1], ids[prompt_len:]]
        scale = case.get("log-ratio scale", 0.05)
        old = exact + scale * torch.randn(completion_len, generator=gen, dtype=torch.float64)
        if k == 0:
            for at in _bad_positions(case, completion_len):
                old[at] = exact[at] if bad is None else bad
        sign = case["advantage"] if k % 2 == 0 else -case["advantage"]
        out.append(
            TokenizedRecord(
                token_ids=ids.tolist(),
                input_pos=list(range(len(ids))),
                assistant_mask=[0] * prompt_len + [1] * completion_len,
                logprobs=[math.nan] * prompt_len + old.tolist(),
                advantage=sign,
                weight=1.0 / branches,
                prompt_id=0,
                prompt_length=prompt_len - 1,
            )
        )
    return out


def _bad_positions(case: dict[str, Any], completion_len: int) -> list[int]:
    """The completion tokens of the first branch that get the bad old logprob: token ``at``,
    and with ``bad tokens`` n (default 1: item 8's several bad tokens a row, issue #53) n
    tokens spread over the completion from it (fewer where the completion is shorter)."""
    count = max(1, int(case.get("bad tokens") or 1))
    stride = max(1, completion_len // count)
    return sorted({(case["at"] + j * stride) % completion_len for j in range(count)})


@dataclass
class Step:
    """What one step gave: the loss of each packed row (ART calls ``loss_fn`` once a row), the
    losses' dtype, and the gradient the rows' backwards left on the model's logits table (None
    without grad)."""

    losses: list[float]
    dtype: Any
    grad: torch.Tensor | None
    # each row's largest |advantage x weight| of a token over its reduction's denominator (the
    # row's trainable tokens under "mean", 1 under "sum"): one token's term at ratio 1. ART's
    # packer normalises advantages and weights over the batch and may split a group into rows,
    # so this is measured from the rows ART made, not computed from the case.
    token_scales: list[float]

    def raw(self) -> dict[str, Any]:
        """The step as JSON values for the tape (issue #53): the rows' losses, their dtype's
        name, the largest |gradient| on the logits table (NaN or inf where any entry is not
        finite; None without a gradient) and the rows' token scales."""
        return {
            "losses": list(self.losses),
            "dtype": str(self.dtype).removeprefix("torch."),
            "grad_max": None if self.grad is None else float(self.grad.abs().max()),
            "token_scales": list(self.token_scales),
        }


def raw(step: Step | str) -> dict[str, Any]:
    """What :func:`run_step` gave, as the tape holds it: a step's values, or ``{"error": text}``."""
    return {"error": step} if isinstance(step, str) else step.raw()


def run_step(
    path: Path,
    case: dict[str, Any],
    *,
    bad: float | None = None,
    config: dict[str, Any] | None = None,
    strict: bool = False,
) -> Step | str:
    """One step of ``case`` through the path, every packed row through the case's caller
    (``bad``: the old logprob of completion token ``at`` of the first branch; ``config``:
    instead of the case's), or the error's text (``strict``: the error is raised, with ART's
    file and line)."""
    table = _table(case["seed"], case["grad"])
    packed = path.pack.packed_tensors_from_tokenized_results(
        _records(case, table, bad),
        callers_.packed_length(case),
        pad_token_id=0,
        truncate_long_results=False,
        verbosity=0,
    )
    config = config_of(case) if config is None else config
    reduction = callers_.REDUCTION[case["caller"]]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # 0.5.21 warns that it skips TIS
            if case["caller"] in callers_.RUN:
                if path.callers is None:
                    raise ValueError(f"{case['caller']}'s caller is not loaded: Path.callers")
                rows = path.callers.rows(case["caller"], path, packed, table, case, config)
            else:
                rows = _at_loss_fn(path, packed, table, case, config, reduction)
    except Exception as exc:  # judged by the caller: a clear error, or a failure
        if strict:
            raise
        return f"{type(exc).__name__}: {exc}"[:200]
    losses, token_scales = [], []
    for result in rows:
        row = result.inputs
        losses.append(float(result.loss.detach()))
        trainable = float(row["assistant_mask"][:, 1:].sum())
        term = float((row["advantages"][:, 1:] * row["weights"][:, 1:]).abs().max())
        token_scales.append(term / (trainable if reduction == "mean" else 1.0))
    dtype = rows[-1].loss.dtype if rows else None
    return Step(losses, dtype, table.grad if case["grad"] else None, token_scales)


def _at_loss_fn(
    path: Path,
    packed: dict[str, Any],
    table: torch.Tensor,
    case: dict[str, Any],
    config: dict[str, Any],
    reduction: str,
) -> list[callers_.RowResult]:
    """Megatron's call of ``loss_fn`` (its ``reduce_loss`` cannot run here): every row's
    ``create_train_inputs`` in ``LossInputs``, the new logprobs in the head's dtype, the
    reference's in FP32, ``reduction`` its own; the backward run where the case has grad.
    On odd seeds (issue #53, the review's fake kept on this path) as ART's default selective LM
    head (``ART_MEGATRON_SELECTIVE_LM_HEAD`` on) makes it: ``LmHeadTokenSelection.from_labels``
    on the row's shifted labels masked to its assistant tokens (``_prepare_dense_rl_micro``), its
    ``compact_loss_inputs`` (``AlignedLossInputs``, ``entropies_are_aligned``), the new and
    reference logprobs of the selected tokens only."""
    train_config = path.types.TrainConfig(learning_rate=1e-5)
    out = []
    for i in range(int(packed["tokens"].shape[0])):
        row = path.inputs.create_train_inputs(packed, i, train_config, config, False)
        tokens = row["tokens"]
        new = torch.log_softmax(table[tokens[:, :-1]], -1).gather(-1, tokens[:, 1:, None])
        new = torch.nn.functional.pad(new.squeeze(-1), (0, 1)).to(DTYPES[case["new dtype"]])
        ref = new.detach().float() - 0.01 if config.get("kl_penalty_coef") else None
        inputs = path.loss.LossInputs(inputs=row)
        if path.selective is not None and case["seed"] % 2:
            shift = path.loss.shift_tensor
            labels = shift(tokens, -100)
            labels = torch.where(shift(row["assistant_mask"], False), labels, -100)
            selection = path.selective.LmHeadTokenSelection.from_labels(labels)
            inputs = selection.compact_loss_inputs(inputs)
            new, ref = selection.select(new), selection.select_optional(ref)
        loss = path.loss.loss_fn(inputs, new, ref, None, config, reduction).policy_loss
        if case["grad"]:
            loss.backward()
        out.append(callers_.RowResult(loss, row))
    return out


def cases(fixed: dict[str, tuple[Any, ...]], extra: dict[str, tuple[Any, ...]]) -> list[Case]:
    """The covering array over the config and path values (``fixed`` narrows a dimension,
    ``extra`` adds the claim's own), deterministic and ART-free: a claim's ``edges()``. Each
    case carries a seed (its model's logits) and the completion token ``at`` that gets the bad
    old logprob. The array is made over the callers' reductions (:func:`_callers`), then each
    case is given a caller of its reduction in which its values reach ``loss_fn``."""
    dims = {**CONFIG_VALUES, **PATH_VALUES, **fixed, **extra}
    by_reduction = {k: v for k, v in dims.items() if k != "caller"}
    by_reduction = {**by_reduction, "reduction": ("mean", "sum")}
    order = [k if k != "caller" else "reduction" for k in dims]
    arranged = {k: by_reduction[k] for k in order}
    rows = _callers(_domain.pairwise_cases(arranged), dims)
    rng = random.Random(0)
    return [
        _ordered(dict(base_case(), **row, seed=n, at=rng.randrange(1 << 14)), extra)
        for n, row in enumerate(_one_long_unsloth_row(rows))
    ]


def _callers(rows: list[Case], dims: dict[str, tuple[Any, ...]]) -> list[Case]:
    """Each case of an array over the reductions given a caller of its reduction: "sum" is
    Megatron's; "mean" Unsloth's where the config sets a KL penalty (Tinker passes no
    reference logprobs, so its KL is off), else Unsloth's or Tinker's, whichever has fewer
    cases. A pair of a caller and a value the array then lacks is added: a copy of the first
    case with that value, given that caller."""
    out: list[Case] = []
    count = dict.fromkeys(dims["caller"], 0)
    for row in rows:
        row = {("caller" if k == "reduction" else k): v for k, v in row.items()}
        if row["caller"] == "sum":
            caller = "megatron"
        elif row.get("kl_penalty_coef") is not None:
            caller = "unsloth"
        else:
            caller = min(("tinker", "unsloth"), key=lambda c: count[c])
        count[caller] += 1
        out.append(dict(row, caller=caller))
    for caller in dims["caller"]:
        for key, values in dims.items():
            for value in values:
                if key == "caller" or any(
                    r["caller"] == caller and _same(r[key], value) for r in out
                ):
                    continue
                first = next(r for r in out if _same(r[key], value))
                out.append(dict(first, caller=caller))
    return out


def _same(a: Any, b: Any) -> bool:
    return a == b and type(a) is type(b)


def _one_long_unsloth_row(rows: list[Case]) -> list[Case]:
    """The covering array with one Unsloth step past :data:`UNSLOTH_LONG` tokens, its last:
    ART's ``calculate_attn_bias`` makes a rows x rows mask (1.2-1.6 s a step at 8,192 tokens on
    one core, 0.01 s at 1,024). Each such case becomes Tinker's (the same reduction) plus an
    Unsloth copy of 1,024 tokens, and the first is added again as it was, at the end: every
    pair of values the array covered is still in some case ((Unsloth, the long row) in the
    last, Unsloth's other pairs in the copy, the long row's in Tinker's), and a search that
    finds a counterexample earlier shrinks it from a cheap case."""
    out: list[Case] = []
    long: list[Case] = []
    for row in rows:
        if row.get("caller") != "unsloth" or row["row tokens"] <= UNSLOTH_LONG:
            out.append(row)
            continue
        long = long or [row]
        out += [dict(row, caller="tinker"), dict(row, **{"row tokens": UNSLOTH_LONG})]
    return out + long


def draw(
    fixed: dict[str, tuple[Any, ...]], extra: dict[str, tuple[Any, ...]], rng: random.Random
) -> Case:
    """One random input of the same domain (a claim's ``sample``): each dimension a value drawn
    between its listed ones (:func:`draw_value`), so draws reach values the covering array
    does not list (rows of any length from 16 to 8,192 tokens, any epsilon, TIS bound or
    advantage in range); a fresh model seed and bad-token position."""
    dims = {**CONFIG_VALUES, **PATH_VALUES, **fixed, **extra}
    row = {k: draw_value(v, rng) for k, v in dims.items()}
    return _ordered(
        dict(base_case(), **row, seed=rng.randrange(1 << 30), at=rng.randrange(1 << 14)), extra
    )


def draw_value(values: tuple[Any, ...], rng: random.Random) -> Any:
    """A value of a dimension listed as ``values``: one of them, picked at random; a number is
    then redrawn between the smallest and largest listed values of its type and sign (log-
    uniformly where they span ten times or more), so an int stays an int (ART's TIS bound 2 is
    not 2.0) and a negative advantage negative. Non-numbers (None, names, booleans) as picked."""
    pick = rng.choice(values)
    if isinstance(pick, bool) or not isinstance(pick, int | float):
        return pick
    kin = [abs(v) for v in values if type(v) is type(pick) and (v < 0) == (pick < 0)]
    low, high = min(kin), max(kin)
    if low == high:
        return pick
    if low > 0 and high >= 10 * low:
        magnitude = math.exp(rng.uniform(math.log(low), math.log(high)))
    else:
        magnitude = rng.uniform(low, high)
    magnitude = min(max(magnitude, low), high)
    if isinstance(pick, int):
        magnitude = round(magnitude)
    return -magnitude if pick < 0 else magnitude


def _ordered(case: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """The claim's own keys first, then those set: a counterexample shows 16 keys."""
    first = {k: case[k] for k in extra}
    rest = sorted(case.items(), key=lambda kv: kv[1] is None)
    return {**first, **{k: v for k, v in rest if k not in first}}


def describe(fixed: dict[str, tuple[Any, ...]], extra: dict[str, tuple[Any, ...]]) -> str:
    """The domain in words, for the verdict: each dimension and its values (- for unset), the
    claim's own first (a record keeps the first 400 characters; the verdict's detail all)."""
    dims = {**extra, **fixed, **PATH_VALUES}
    dims.update({k: v for k, v in CONFIG_VALUES.items() if k not in dims})
    return "; ".join(f"{k} {'/'.join(_short(v) for v in vals)}" for k, vals in dims.items())


def _short(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and len(repr(value)) > 9:
        return f"{value:g}"
    return repr(value) if isinstance(value, float) else str(value)
