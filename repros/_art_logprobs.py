"""Item 401's check (and the loader item 2's shares): ART's Unsloth ``_calculate_logprobs``
searched over its domain.

``art/unsloth/train.py``'s ``_calculate_logprobs(lm_head_t, hidden_states, next_input_ids,
chunk_size) -> (log_probs, entropy)`` is run from ``unsloth/train.py`` imported whole (:func:`load`;
its module imports Unsloth's training stack, stood in for where absent). Item 2's property (the
logsumexp after the logits) is ``_art_lse``'s; item 401's, here, is about the logits: the
log-probabilities (the first output; the entropy is a metric) are those of the FP32-accurate
product of the operands. Per token, ``|lp - lp64| <= 8 eps32 (sqrt(H) max_j (|h| @ |W|)_j +
|lse64|)`` (an FP32-accumulated dot product's bound, plus the FP32 log-softmax), lp64 the
float64 log-softmax of the float64 product of the same operands; with grad on, the gradient of
``sum(u * lp)`` reaching the hidden states (and the head) within ``4 (eps + sqrt(n) eps32)``
(eps their dtype's, n the terms an FP32 accumulation sums) of the float64
``u (onehot - p) @ W^T``, plus what the FP32 logits' bound moves p by, 4 eps32 of the row's
largest softmax gradient, and the dtype's subnormal spacing.

Split (issue #53): :func:`logits_measure` runs ART on an input (its operands made by
:func:`logits_operands` from the input's seed) and returns numbers only: the log-probabilities
of 16 tokens (the first and the last among them, the rest drawn from the seed), the hidden
states' gradient at those tokens x 4 hidden columns, and the head's at 8 x 8 entries.
:func:`logits_judge` (no ART) makes the same operands and holds those numbers to the float64
oracle. BF16 logits put most of an input's tokens over the bound (58% to all of them, median
98%, over the edges and 30 draws), so the 16 tokens judged show it where every token would.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import random
import types
import warnings
from collections.abc import Iterator
from typing import Any

import _art_whole
import _domain
import _shown
import _simpler
import torch

RELPATH = "unsloth/train.py"
FUNCTION = "_calculate_logprobs"
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
EPS32 = torch.finfo(torch.float32).eps
ART_CHUNK = 1024  # ART's default logprob_calculation_chunk_size
REAL_VOCAB = 151_936


CALLER = "calculate_logprobs"  # ART's caller of FUNCTION, which compute_loss calls
# ART's calls of CALLER in compute_loss, by name: (inference_mode, no_grad, reference_logprobs,
# reference_adapter_name). With grad the policy's; without, the other three (the new logprobs
# precalculated, the reference's with and without a KL reference adapter).
CALLS = {
    "policy": (False, False, False, None),
    "new_logprobs": (True, True, False, None),
    "reference": (True, False, True, None),
    "reference_adapter": (False, True, True, "kl_ref/adapter"),
}
SCOPE = "run on CPU tensors: a patch that acts differently on CUDA tensors is not seen"
ENTERED = (  # the calls, for a claim's domain
    "ART's 4 calls of calculate_logprobs (policy's with grad; new, reference, adapter reference "
    "without)"
)


class _Peft:
    """The PEFT model ``trainer.accelerator.unwrap_model`` hands back: adapters are names."""

    def __init__(self) -> None:
        self.peft_config: dict[str, str] = {}
        self.active_adapter: Any = ["default"]

    def load_adapter(self, path: str, adapter_name: str) -> None:
        self.peft_config[adapter_name] = path

    def set_adapter(self, name: str) -> None:
        self.active_adapter = name

    @contextlib.contextmanager
    def disable_adapter(self) -> Iterator[None]:
        yield


class _Model:
    """Unsloth's model with ``UNSLOTH_RETURN_HIDDEN_STATES``: its ``.logits`` are the hidden
    states, here the case's (an identity op, so the calls' grad and inference modes apply)."""

    def __init__(self, hidden: torch.Tensor) -> None:
        self.hidden = hidden

    def __call__(self, *, input_ids: Any, causal_mask: Any, **kwargs: Any) -> Any:
        return types.SimpleNamespace(logits=self.hidden.clone())


class Entry:
    """ART's ``calculate_logprobs`` entered as ``compute_loss`` calls it, the trainer, its model
    and adapters stood in for: ``entry(head, hidden, ids, chunk)`` returns ``(call, logprobs)``
    for the policy's call when ``hidden`` requires grad, else for each call without grad."""

    def __init__(self, caller: Any) -> None:
        self.caller = caller

    def __call__(
        self, head: torch.Tensor, hidden: torch.Tensor, ids: torch.Tensor, chunk: int
    ) -> list[tuple[str, torch.Tensor]]:
        names = ["policy"] if hidden.requires_grad else [n for n in CALLS if n != "policy"]
        peft = _Peft()
        trainer = types.SimpleNamespace(
            model=_Model(hidden),
            accelerator=types.SimpleNamespace(unwrap_model=lambda model, **kw: peft),
        )
        half = hidden.dtype if hidden.dtype != torch.float32 else torch.bfloat16
        out = []
        for name in names:
            inference_mode, no_grad, reference, adapter = CALLS[name]
            with warnings.catch_warnings():  # autocast(device_type="cuda") without CUDA: off
                warnings.filterwarnings("ignore", message=".*CUDA is not available.*")
                logprobs = self.caller(
                    half,
                    trainer,
                    ids,
                    None,
                    {},
                    ids,
                    head,
                    chunk_size=chunk,
                    inference_mode=inference_mode,
                    no_grad=no_grad,
                    reference_logprobs=reference,
                    reference_adapter_name=adapter,
                )[0]
            out.append((name, logprobs))
        return out


@contextlib.contextmanager
def load(art: Any) -> Iterator[tuple[Entry, int]]:
    """ART's ``calculate_logprobs`` (as :class:`Entry`) and ``_calculate_logprobs``'s first line,
    from ``unsloth/train.py`` imported whole (``_art_whole``: Unsloth's training stack stood in
    for where absent), so a helper, alias or table of the file resolves as in ART; the module
    stays importable while the context is open."""
    with _art_whole.whole(art) as whole:
        module = whole.load(RELPATH)
        function = getattr(module, FUNCTION)
        yield Entry(getattr(module, CALLER)), inspect.getsourcelines(function)[1]


def calls_lp(calls: list[tuple[str, torch.Tensor]], pick: Any) -> dict[str, Any]:
    """A measurement's log-probabilities: ``lp`` the first call's (``pick`` of them), ``lp_calls``
    the other calls' by name."""
    raw: dict[str, Any] = {"lp": pick(calls[0][1])}
    if len(calls) > 1:
        raw["lp_calls"] = {name: pick(lp) for name, lp in calls[1:]}
    return raw


def calls_missing(case_grad: bool, raw: dict[str, Any]) -> str | None:
    """Which of ART's calls without grad a measurement lacks (None when none)."""
    if case_grad:
        return None
    got = raw.get("lp_calls")
    want = [n for n in CALLS if n not in ("policy", "new_logprobs")]
    if not isinstance(got, dict) or any(n not in got for n in want):
        return "log-probabilities of every call without grad"
    return None


# ---- item 401: the logits -------------------------------------------------------------------

LOGITS_COVERS = (
    "hidden dtype bfloat16/float16/float32; vocab 17-151,936 (at 151,936 hidden "
    "8); grad off/hidden/hidden+head; chunk 1-1024; batch 1-2 x 1-1100 positions; hidden 8-256; "
    "logits 4 or 58; hidden |max| 4-400; 16 tokens judged; " + ENTERED + "; " + SCOPE
)


def logits_edges() -> list[dict[str, Any]]:
    """Qwen3's vocabulary first (it decides a fix for small chunks only), then every dtype x grad
    mode, then the other sizes."""
    base = {
        "batch": 1,
        "seq": 32,
        "chunk": 16,
        "vocab": 2048,
        "hidden": 128,
        "scale": 58.0,
        "hmax": 4.0,
    }
    out = [  # a chunk of 32 x 151,936 = 4.9M logits, then one with grad
        {**base, "dtype": "bfloat16", "grad": "off", "vocab": REAL_VOCAB, "hidden": 8, "chunk": 32},
        {
            **base,
            "dtype": "bfloat16",
            "grad": "hidden",
            "vocab": REAL_VOCAB,
            "hidden": 8,
            "chunk": ART_CHUNK,
            "seq": 8,
        },
    ]
    out += [
        {**base, "dtype": d, "grad": g} for d in DTYPES for g in ("off", "hidden", "hidden+head")
    ]
    out += [
        {**base, "dtype": "bfloat16", "grad": "hidden", "scale": 4.0},
        {
            **base,
            "dtype": "bfloat16",
            "grad": "hidden",
            "seq": 1100,
            "chunk": ART_CHUNK,
            "vocab": 512,
            "hidden": 64,
        },
        {**base, "dtype": "bfloat16", "grad": "hidden", "chunk": 1, "seq": 3},
        {**base, "dtype": "bfloat16", "grad": "hidden", "batch": 2, "seq": 48},
        # Hidden states as large as a real model's (the head smaller, the logits the same).
        {**base, "dtype": "bfloat16", "grad": "off", "hidden": 64, "hmax": 40.0},
        {**base, "dtype": "bfloat16", "grad": "hidden", "hmax": 400.0},
        {**base, "dtype": "float16", "grad": "off", "hidden": 64, "hmax": 400.0},
    ]
    return [{**case, "seed": 0} for case in out]


def logits_sample(rng: random.Random) -> dict[str, Any]:
    return {
        "batch": rng.choice((1, 2)),
        "seq": rng.choice((1, 5, 40, 100)),
        "chunk": rng.choice((3, 7, 32, 64, ART_CHUNK)),
        "vocab": rng.choice((17, 1000, 2048)),
        "hidden": rng.choice((8, 64, 256)),
        "scale": rng.choice((4.0, 20.0, 58.0)),
        "dtype": rng.choice(list(DTYPES)),
        "grad": rng.choice(("off", "hidden", "hidden+head")),
        "hmax": rng.choice((4.0, 40.0, 400.0)),
        "seed": rng.randrange(2**31),
    }


LOGITS_SIMPLEST = {
    "dtype": ("bfloat16",),
    "grad": ("off", "hidden"),
    "batch": (1,),
    "seq": (1, 32),
    "chunk": (16,),
    "vocab": (2048,),
    "hidden": (8, 64, 128, 256),
    "scale": (58.0,),
    "hmax": (4.0, 40.0, 400.0),
}


TOKENS, COLUMNS, HEAD_ENTRIES = 16, 4, 8  # of an input, whose values are judged
LOGITS_CLAIM = "bf16-logits-on-unsloth"
LOGITS_SAMPLES = 4  # random inputs after the edges (artbot draws as many with its own seed)


@_shown.made_once
def logits_operands(case: dict[str, Any]) -> tuple[torch.Tensor, ...]:
    """hidden [b, s, h] and head [h, v] in the case's dtype, target ids [b, s] and the float64
    weights u [b, s] of the backward's ``sum(u * lp)``: from the case alone (its seed, shape and
    sizes), the same in the check's process and in artbot's."""
    dtype = DTYPES[case["dtype"]]
    b, s, v, h = case["batch"], case["seq"], case["vocab"], case["hidden"]
    seed = case.get("seed", 0) * 1_000_003 + b * 7 + s * 131 + v * 3 + h
    gen = torch.Generator().manual_seed(seed % 2**63)
    # Logits h @ W have a standard deviation of about scale / 4: the top reaches ~scale.
    # The hidden states' standard deviation is hmax / 4 (their |max| about hmax), the head
    # divided by as much, so the logits keep their size whatever the hidden states'.
    spread = case.get("hmax", 4.0) / 4
    hidden = (torch.randn(b, s, h, generator=gen, dtype=torch.float64) * spread).to(dtype)
    head = (
        torch.randn(h, v, generator=gen, dtype=torch.float64)
        * (case["scale"] / 4 / math.sqrt(h) / spread)
    ).to(dtype)
    ids = torch.randint(0, v, (b, s), generator=gen)
    u = torch.randn(b, s, generator=gen, dtype=torch.float64)
    return hidden, head, ids, u


def logits_shown(case: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The tokens (flat over batch x seq), hidden columns and head entries (hidden x vocab)
    whose values are judged: the first and the last of each, the others drawn from the seed."""
    gen = torch.Generator().manual_seed(case.get("seed", 0) % 2**63)
    h, v = case["hidden"], case["vocab"]
    return {
        "tokens": _shown.spread(case["batch"] * case["seq"], TOKENS, gen),
        "columns": _shown.spread(h, COLUMNS, gen),
        "head_rows": _shown.spread(h, HEAD_ENTRIES, gen),
        "head_ids": _shown.spread(v, HEAD_ENTRIES, gen),
    }


class LogitsMeasure:
    """:func:`logits_judge`'s measurements, made through ART's ``calculate_logprobs``."""

    def __init__(self, impl: Any) -> None:
        self.impl = impl

    def __call__(self, case: dict[str, Any]) -> dict[str, Any]:
        hidden, head, ids, u = logits_operands(case)
        shown = logits_shown(case)
        hidden.requires_grad_(case["grad"] != "off")
        head.requires_grad_(case["grad"] == "hidden+head")
        calls = self.impl(head, hidden, ids, case["chunk"])
        logprobs = calls[0][1]
        raw = calls_lp(calls, lambda lp: lp.detach().double().flatten()[shown["tokens"]].tolist())
        if case["grad"] == "off":
            return raw
        raw["requires_grad"] = logprobs.requires_grad
        if not logprobs.requires_grad:
            return raw
        (logprobs.double() * u).sum().backward()
        b, s, h = hidden.shape
        grad = hidden.grad
        raw["hidden_grad"] = (
            None
            if grad is None
            else grad.reshape(b * s, h)[shown["tokens"]][:, shown["columns"]].double().tolist()
        )
        if head.requires_grad:
            grad = head.grad
            raw["head_grad"] = (
                None
                if grad is None
                else grad[shown["head_rows"]][:, shown["head_ids"]].double().tolist()
            )
        return raw


# The domain's bounds, which a case must keep to before the judge makes its operands.
LOGITS_CHOICES = {"dtype": tuple(DTYPES), "grad": ("off", "hidden", "hidden+head")}
LOGITS_LIMITS = {
    "batch": (1, 2),
    "seq": (1, 1100),
    "chunk": (1, ART_CHUNK),
    "vocab": (2, REAL_VOCAB),
    "hidden": (1, 256),
    "scale": (0.0, 58.0),
    "hmax": (0.0, 400.0),
    "seed": (0, 2**31),
}
MAX_LOGITS = 2**23  # tokens x vocab: 4.9M at 32 x 151,936
MAX_HEAD = 2**21  # hidden x vocab: 1.2M at 8 x 151,936


def logits_judge(case: dict[str, Any], raw: Any) -> _domain.Failure | None:
    """The property on one input, from the numbers :class:`LogitsMeasure` returned and the
    float64 oracle on the same operands (no ART)."""
    why = _shown.outside(case, LOGITS_CHOICES, LOGITS_LIMITS)
    if why is None and (
        case["batch"] * case["seq"] * case["vocab"] > MAX_LOGITS
        or case["hidden"] * case["vocab"] > MAX_HEAD
    ):
        why = "logits past the domain's size"
    if why is not None:
        return _domain.Failure(why, "an input of the claim's domain")
    if not isinstance(raw, dict):
        return _domain.Failure("no measurement", "FP32 log-probabilities")
    hidden, head, ids, u = logits_operands(case)
    shown = logits_shown(case)
    b, s, h = hidden.shape
    h64 = hidden.double().reshape(b * s, h)
    w64 = head.double()
    ids, u = ids.reshape(-1), u.reshape(-1)
    # Every token's reference when the head's gradient is judged (it sums over all tokens);
    # the shown tokens' otherwise.
    rows = torch.arange(b * s) if case["grad"] == "hidden+head" else shown["tokens"]
    logits64 = h64[rows] @ w64
    lse64 = torch.logsumexp(logits64, -1)
    lp64 = logits64.gather(-1, ids[rows, None]).squeeze(-1) - lse64
    dot = math.sqrt(h) * (h64[rows].abs() @ w64.abs()).amax(-1)
    bound = 8 * EPS32 * (dot + lse64.abs())
    at = torch.searchsorted(rows, shown["tokens"])  # the shown tokens among ``rows``
    missing = calls_missing(case["grad"] != "off", raw)
    if missing is not None:
        return _domain.Failure("no measurement", missing)
    for lp in [raw.get("lp"), *(raw.get("lp_calls") or {}).values()]:
        ratio = _shown.worst(lp, lp64[at], bound[at])
        if ratio is None:
            return _domain.Failure("log-probabilities of the wrong shape", "FP32 log-probabilities")
        if ratio > 1:
            return _domain.Failure(round(ratio, 3), "1 (logprob error / FP32 bound)")
    if case["grad"] == "off":
        return None
    if raw.get("requires_grad") is not True:
        return _domain.Failure("logprobs carry no gradient", "a gradient")
    p = torch.softmax(logits64, -1)
    d = -p
    d[torch.arange(len(rows)), ids[rows]] += 1
    gd = u[rows, None] * d  # d(sum u lp) / d logits, [rows, v]
    # What the FP32 logits' bound moves: each p_j by up to p_j * 2 * bound.
    # An FP32 softmax's backward is accurate to eps32 of the row's largest entry.
    top = d.abs().amax(-1, keepdim=True)
    slack = u[rows].abs()[:, None] * (p * 2 * bound[:, None] + 4 * EPS32 * top)
    # Each leaf's gradient sums over the vocabulary (hidden) or the tokens (head): an FP32
    # accumulation adds up to sqrt(terms) eps32 of the sum of magnitudes, typically.
    cols, hr, vi = shown["columns"], shown["head_rows"], shown["head_ids"]
    w_c = w64[cols]  # [c, v]
    leaves = [
        (
            "hidden_grad",
            gd[at] @ w_c.T,
            gd[at].abs() @ w_c.abs().T,
            slack[at] @ w_c.abs().T,
            math.sqrt(case["vocab"]),
        )
    ]
    if case["grad"] == "hidden+head":
        hh = h64[:, hr]  # [tokens, rows shown]
        leaves.append(
            (
                "head_grad",
                hh.T @ gd[:, vi],
                hh.abs().T @ gd[:, vi].abs(),
                hh.abs().T @ slack[:, vi],
                math.sqrt(b * s),
            )
        )
    dtype = DTYPES[case["dtype"]]
    for key, exact, size, moved, terms in leaves:
        if raw.get(key) is None:
            return _domain.Failure("no gradient reached the leaf", "a gradient")
        eps = torch.finfo(dtype).eps + terms * EPS32
        # The floor: the dtype's subnormal spacing (an FP16 gradient of 1e-20 is 0).
        floor = torch.finfo(dtype).tiny * torch.finfo(dtype).eps
        ratio = _shown.worst(raw[key], exact, 4 * eps * (size + moved) + moved + floor)
        if ratio is None:
            return _domain.Failure("a gradient of the wrong shape", "a gradient")
        if ratio > 1:
            return _domain.Failure(round(ratio, 3), "1 (gradient error / bound)")
    return None


def search_logits(art: Any, seed: int = 0) -> tuple[_domain.Found, int]:
    """Item 401's search: artbot's plan when ``art`` carries one, else the edges and
    ``LOGITS_SAMPLES`` draws; every input taped on ``art``."""
    with load(art) as (impl, line):
        found = _simpler.search(
            LOGITS_COVERS,
            logits_edges(),
            None,
            LOGITS_SIMPLEST,
            sample=logits_sample,
            samples=LOGITS_SAMPLES,
            seed=seed,
            claim=LOGITS_CLAIM,
            channel=art,
            measure=LogitsMeasure(impl),
            judge=logits_judge,
        )
    return found, line
