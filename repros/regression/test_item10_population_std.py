"""Audit item 10: tinker_native's advantages are normalized with the population standard
deviation, as ART's other backends do.

The test enters where tinker_native's backend does: trajectory_groups_to_datums, the caller that
builds the datums, one group a step, ``normalize_advantages`` on and off, so a fix made in the
caller counts as one made in ``compute_advantages``. What it reads is what ART trains on: each
datum's ``advantages`` where its ``mask`` is 1, mapped back to its trajectory by the completion's
token id. Over seeded draws: group sizes 2-1,024 and reward scales 1e-3 to 1e8 (ART sets no limit
on a group's size; 0/1 and two-point rewards with offsets as FP32 values, uniform rewards to two
decimals, which FP32 rounds, with a spread), and a step of 128 groups of 8 (a run's
groups_per_step). Oracle: float64 population-std advantage, (r - mean) / population std of the
rewards as ART's FP32 tensor holds them. Tolerance: 4 sqrt(n) eps(fp32) (1 + max|r|/std), FP32
ulps scaled by the group's conditioning; with ``normalize_advantages=False``, r - mean within
4 n ulps of max|r|. Equal rewards are outside this item (artbot's follow-up 1001 tests them).

Stand-ins, at the boundary only: the tinker service's ``Datum``/``ModelInput``/``TensorData``
hold what ART gives them; the renderer gives the prompt's token ids; each trajectory is a record
with the fields this path reads, its one ``Choice`` made without validation (its logprobs list the
completion as ``token_id:N``, as vLLM returns them); where ``art.trajectories`` does not import,
``LegacyHistory`` is a record of its two fields and ``get_messages`` is
``_compat.messages_from_legacy_history``."""

import math
import random
from types import SimpleNamespace

import pytest

try:  # torch and ART's optional dependencies may be absent where ART's tests run: skip
    import torch

    from art.tinker_native import data
except ModuleNotFoundError as missing:  # one of ART's own modules missing is a failure
    if (missing.name or "art").partition(".")[0] == "art":
        raise
    pytest.skip(f"{missing.name} is not installed", allow_module_level=True)

EPS32 = torch.finfo(torch.float32).eps
FIRST_ID, STRIDE = 100_000, 10_000  # a completion's token id: FIRST_ID + group * STRIDE + index
PROMPT = [11, 12, 13]


@pytest.fixture(autouse=True)
def _boundary(monkeypatch: pytest.MonkeyPatch) -> None:
    tinker = SimpleNamespace(
        Datum=SimpleNamespace,
        ModelInput=SimpleNamespace(from_ints=lambda tokens: list(tokens)),
        TensorData=SimpleNamespace(from_torch=lambda tensor: tensor),
    )
    monkeypatch.setattr(data, "tinker", tinker)
    try:
        data.LegacyHistory(messages_and_choices=[], tools=None)
    except Exception:  # art/trajectories/__init__.py does not import here
        from art.trajectories._compat import messages_from_legacy_history

        monkeypatch.setattr(data, "LegacyHistory", SimpleNamespace)
        monkeypatch.setattr(data, "get_messages", messages_from_legacy_history)


def _choice(token_id: int) -> object:
    token = SimpleNamespace(token=f"token_id:{token_id}", logprob=-0.5)
    fields = {"index": 0, "logprobs": SimpleNamespace(content=[token] * 3, refusal=None)}
    if hasattr(data.Choice, "model_construct"):  # openai's pydantic model
        return data.Choice.model_construct(finish_reason="stop", message=None, **fields)
    made = type(
        "Choice",
        (data.Choice,),
        {
            "__new__": lambda cls, **kw: object.__new__(cls),
            "__init__": lambda self, **kw: self.__dict__.update(kw),
        },
    )
    return made(**fields)


class _Renderer:
    def build_generation_prompt(self, messages: list) -> SimpleNamespace:
        return SimpleNamespace(to_ints=lambda: list(PROMPT))


def _step(groups: list[list[float]], normalize: bool) -> list[list[list[float]]]:
    """Per group, each trajectory's token advantages in the datums ART builds for one step."""
    made = [
        SimpleNamespace(
            trajectories=[
                SimpleNamespace(
                    reward=reward,
                    exchanges=[],
                    messages_and_choices=[
                        {"role": "user", "content": f"q{g}"},
                        _choice(FIRST_ID + g * STRIDE + i),
                    ],
                    tools=None,
                    additional_histories=[],
                )
                for i, reward in enumerate(rewards)
            ]
        )
        for g, rewards in enumerate(groups)
    ]
    got: list[list[list[float]]] = [[[] for _ in rewards] for rewards in groups]
    for datum in data.trajectory_groups_to_datums(made, _Renderer(), None, normalize):
        inputs = datum.loss_fn_inputs
        mask = inputs["mask"] > 0
        for token, value in zip(
            inputs["target_tokens"][mask].tolist(), inputs["advantages"][mask].tolist(), strict=True
        ):
            g, i = divmod(int(token) - FIRST_ID, STRIDE)
            got[g][i].append(float(value))
    # a group with no datum: advantage 0
    return [[tokens or [0.0] for tokens in group] for group in got]


def _advantages(rewards: list[float], normalize: bool) -> list[list[float]]:
    """Each trajectory's token advantages in the datums ART builds for one group (a step)."""
    return _step([rewards], normalize)[0]


def _fp32(rewards: list[float]) -> list[float]:
    return [float(r) for r in torch.tensor(rewards, dtype=torch.float32).tolist()]


def _groups() -> list[list[float]]:
    rng = random.Random(10)
    groups = [[0.0, 1.0], [0.0, 0.0, 0.0, 1.0]]
    while len(groups) < 100:
        n = rng.choice((rng.randint(2, 128), rng.randint(2, 128), rng.randint(2, 1024)))
        if len(groups) == 2:
            n = 1024
        scale = 10 ** rng.uniform(-3, 8)
        offset = scale * rng.choice((0.0, rng.uniform(-3.0, 3.0)))
        kind = rng.choice((0, 1, 2))
        if kind == 2:  # uniform, to two decimals, as a scorer gives them (FP32 rounds 0.37)
            rewards = [offset + scale * round(rng.random(), 2) for _ in range(n)]
        else:
            draw = (lambda: rng.randint(0, 1), lambda: rng.choice((0.25, 1.0)))[kind]
            rewards = _fp32([offset + scale * draw() for _ in range(n)])
        held = _fp32(rewards)
        mean = math.fsum(held) / n
        if math.sqrt(math.fsum((r - mean) ** 2 for r in held) / n) > 1e-6:
            groups.append(rewards)
    return groups


def _check_population_std(rewards: list[float], tokens_per_trajectory: list[list[float]]) -> None:
    held = _fp32(rewards)  # the rewards as ART's FP32 tensor holds them
    n = len(held)
    mean = math.fsum(held) / n
    std = math.sqrt(math.fsum((r - mean) ** 2 for r in held) / n)
    tolerance = 4 * math.sqrt(n) * EPS32 * (1 + max(map(abs, held)) / std)
    for reward, tokens in zip(held, tokens_per_trajectory, strict=True):
        expected = (reward - mean) / std
        assert tokens == pytest.approx([expected] * len(tokens), rel=0, abs=tolerance), (
            f"group of {n}: reward {reward} got advantage {tokens[0]}, the population-std "
            f"advantage is {expected} (tolerance {tolerance:.3g})"
        )


def test_advantages_use_the_population_std() -> None:
    for rewards in _groups():
        _check_population_std(rewards, _advantages(rewards, True))


def test_a_step_of_many_groups_uses_the_population_std() -> None:
    rng = random.Random(128)
    groups = [
        [round(rng.random(), 2) if k % 2 else float(rng.randint(0, 1)) for _ in range(8)]
        for k in range(128)
    ]
    groups = [g for g in groups if len(set(_fp32(g))) > 1]
    for rewards, tokens in zip(groups, _step(groups, True), strict=True):
        _check_population_std(rewards, tokens)


def test_unnormalized_advantages_are_the_centred_rewards() -> None:
    for rewards in _groups():
        held = _fp32(rewards)
        n = len(held)
        mean = math.fsum(held) / n
        tolerance = 4 * n * EPS32 * max(map(abs, held))
        for reward, tokens in zip(held, _advantages(rewards, False), strict=True):
            assert tokens == pytest.approx([reward - mean] * len(tokens), rel=0, abs=tolerance)
