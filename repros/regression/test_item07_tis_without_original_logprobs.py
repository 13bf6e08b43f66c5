"""Audit item 7: without original_logprobs, truncated importance sampling must not reweight the
policy loss by the policy ratio (it has no sampler logprobs to correct for): the loss and its
gradient with TIS set are those of the same step without it, or the call raises an error that
names the missing logprobs.

The property runs over seeded draws: PPO and CISPO, advantages of either sign (1e-3 to 1e3),
importance sampling at the token, sequence, average and geometric_average levels, log policy ratios
from -3 to 3, U a float from 1.01 to 10 or an int from 2 to 10, 1-8 rows (one sequence each) of
1-16 trainable tokens, new logprobs from FP32 logits cast to FP32, BF16 or FP16, old logprobs in
FP32 or the new dtype, logits requiring grad or not. Tolerance: 4 ulps of the loss's dtype, and of
the new logprobs' dtype times the largest gradient for the gradient."""

import random
import re
import warnings

import pytest

try:  # torch and ART's optional dependencies may be absent where ART's tests run: skip
    import torch

    from art.loss import AlignedLossInputs, loss_fn
except ModuleNotFoundError as missing:  # one of ART's own modules missing is a failure
    if (missing.name or "art").partition(".")[0] == "art":
        raise
    pytest.skip(f"{missing.name} is not installed", allow_module_level=True)

DTYPES = (torch.float32, torch.bfloat16, torch.float16)
CLEAR = re.compile(r"log[ _-]?prob", re.IGNORECASE)
LEVELS = ("token", "sequence", "average", "geometric_average")


def _step(case: dict, tis: bool) -> tuple[torch.Tensor, torch.Tensor | None] | str:
    gen = torch.Generator().manual_seed(case["seed"])
    rows, tokens = case["rows"], case["tokens"]
    logits = torch.randn(rows, tokens, 16, generator=gen).requires_grad_(case["grad"])
    targets = torch.randint(0, 16, (rows, tokens, 1), generator=gen)
    new = torch.log_softmax(logits, -1).gather(-1, targets).squeeze(-1).to(case["new"])
    log_ratio = case["scale"] * (2 * torch.rand(rows, tokens, generator=gen) - 1)
    old = (new.detach().float() - log_ratio).to(case["old"])
    inputs = AlignedLossInputs(
        assistant_mask=torch.ones(rows, tokens, dtype=torch.bool),
        old_logprobs=old,
        advantages=torch.tensor(case["advantages"])[:, None].expand(-1, tokens).contiguous(),
        weights=torch.ones(rows, tokens),
        group_ids=torch.arange(1, rows + 1)[:, None].expand(-1, tokens).contiguous(),
    )
    config = {"ppo": case["ppo"], "importance_sampling_level": case["level"]}
    if tis:
        config["truncated_importance_sampling"] = case["U"]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a release may warn that it skips TIS
            loss = loss_fn(inputs, new, None, None, config).policy_loss
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    if case["grad"]:
        loss.backward()
    return loss.detach(), logits.grad


def _cases() -> list[dict]:
    rng = random.Random(7)
    cases = []
    for i in range(150):
        dtype = rng.choice(DTYPES)
        rows = rng.randint(1, 8)
        cases.append(
            {
                "ppo": rng.random() < 0.5,
                "level": LEVELS[i % 4],
                "new": dtype,
                "old": rng.choice((torch.float32, dtype)),
                "scale": rng.choice((0.0, rng.uniform(0.1, 3.0))),
                "U": rng.uniform(1.01, 10.0) if i % 8 < 4 else rng.randint(2, 10),
                "rows": rows,
                "tokens": rng.randint(1, 16),
                "advantages": [rng.choice((-1, 1)) * 10 ** rng.uniform(-3, 3) for _ in range(rows)],
                "grad": i < 2 or rng.random() < 0.75,
                "seed": i,
            }
        )
    return cases


def test_tis_without_original_logprobs_leaves_loss_and_gradient_unchanged() -> None:
    for case in _cases():
        plain = _step(case, tis=False)
        assert not isinstance(plain, str), (case, plain)
        with_tis = _step(case, tis=True)
        if isinstance(with_tis, str):  # an error: it must name the missing logprobs
            assert CLEAR.search(with_tis), (case, with_tis)
            continue
        (a, ga), (b, gb) = with_tis, plain
        eps = torch.finfo(a.dtype).eps
        assert abs(float(a) - float(b)) <= 4 * eps * max(abs(float(a)), abs(float(b))), case
        if ga is not None and gb is not None:
            tol = 4 * torch.finfo(case["new"]).eps * float(gb.abs().max())
            assert float((ga - gb).abs().max()) <= tol, case
