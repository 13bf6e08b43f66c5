"""Audit item 8: whatever the old logprob on a trainable token (-inf, +inf, NaN, a sentinel such
as -9999, or any finite value far below the new one), the loss and its gradients stay finite,
or the step fails with a clear error (one that names the old logprobs) before backward.

The property runs over seeded draws: PPO and CISPO, advantages of either sign (1e-3 to 1e3),
importance sampling at the token, sequence, average and geometric_average levels, 1-8 rows (one
sequence each) of 1-16 trainable tokens, new logprobs from FP32 logits cast to FP32, BF16 or FP16,
old logprobs in FP32 or the new dtype, logits requiring grad or not. The same step with ordinary
old logprobs must run and be finite."""

import math
import random
import re

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


def _step(case: dict, bad: bool) -> tuple[float, bool] | str:
    gen = torch.Generator().manual_seed(case["seed"])
    rows, tokens = case["rows"], case["tokens"]
    logits = torch.randn(rows, tokens, 16, generator=gen).requires_grad_(case["grad"])
    targets = torch.randint(0, 16, (rows, tokens, 1), generator=gen)
    new = torch.log_softmax(logits, -1).gather(-1, targets).squeeze(-1).to(case["new"])
    old = (new.detach().float() + 0.05 * torch.randn(rows, tokens, generator=gen)).to(case["old"])
    if bad:
        value = case["value"]
        if math.isfinite(value):  # a distance below the new logprob, within the dtype
            value = max(float(new[0, 0]) - value, -torch.finfo(case["old"]).max)
        old[0, 0] = value
    inputs = AlignedLossInputs(
        assistant_mask=torch.ones(rows, tokens, dtype=torch.bool),
        old_logprobs=old,
        advantages=torch.tensor(case["advantages"])[:, None].expand(-1, tokens).contiguous(),
        weights=torch.ones(rows, tokens),
        group_ids=torch.arange(1, rows + 1)[:, None].expand(-1, tokens).contiguous(),
    )
    try:
        config = {"ppo": case["ppo"], "importance_sampling_level": case["level"]}
        loss = loss_fn(inputs, new, None, None, config).policy_loss
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    finite = True
    if case["grad"]:
        loss.backward()
        finite = all(bool(torch.isfinite(t.grad).all()) for t in (logits,) if t.grad is not None)
    return float(loss.detach()), finite


def _cases() -> list[dict]:
    rng = random.Random(8)
    values = [float("-inf"), float("inf"), float("nan"), 9999.0, 21.0, 100.0, 1e30, 3.4e38]
    cases = []
    for i in range(240):
        dtype = rng.choice(DTYPES)
        cases.append(
            {
                "ppo": rng.random() < 0.5,
                "level": LEVELS[(i // len(values)) % 4],
                "new": dtype,
                "old": rng.choice((torch.float32, dtype)),
                "value": values[i % 8] if i < 4 * len(values) else 10 ** rng.uniform(1.05, 38),
                "rows": rng.randint(1, 8),
                "tokens": rng.randint(1, 16),
                "advantages": [rng.choice((-1, 1)) * 10 ** rng.uniform(-3, 3) for _ in range(8)],
                "grad": rng.random() < 0.75,
                "seed": i,
            }
        )
        cases[-1]["advantages"] = cases[-1]["advantages"][: cases[-1]["rows"]]
    return cases


def test_loss_and_gradients_stay_finite_whatever_the_old_logprob() -> None:
    for case in _cases():
        step = _step(case, bad=True)
        if isinstance(step, str):  # an error: it must name the old logprobs
            assert CLEAR.search(step), (case, step)
            ordinary = _step(case, bad=False)
            assert not isinstance(ordinary, str), (case, ordinary)
            assert math.isfinite(ordinary[0]) and ordinary[1], (case, ordinary)
            continue
        loss, grads_finite = step
        assert math.isfinite(loss) and grads_finite, (case, loss, grads_finite)
