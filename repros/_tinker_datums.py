"""tinker_native's advantages as ART trains on them: ``trajectory_groups_to_datums``, run whole.

``art/tinker_native/data.py`` is imported as a module from the tree under test (artbot's
harness), and the check enters at ``trajectory_groups_to_datums``, the function
``TinkerNativeBackend.train`` calls with ``normalize_advantages`` and the only caller of
``compute_advantages`` (issue #50: a fix or a fake in the caller counts). What ART computes is
read from the datums it builds: the ``advantages`` of each datum where its ``mask`` is 1.

Stand-ins, only at the boundary (each named in the check's result):

- ``tinker`` (the remote service's client, not installed): ``Datum``, ``ModelInput.from_ints``
  and ``TensorData.from_torch`` only hold what ART gives them;
- openai's ``Choice`` (not installed; the harness's stand-in class): the trajectories hold a
  subclass of that very class that can be made, whose ``logprobs.content`` lists the completion
  as ``token_id:N`` entries, as vLLM returns them;
- the renderer (``tinker_cookbook``, passed in by the caller): ``build_generation_prompt``
  gives the prompt's token ids;
- ``trajectories/__init__.py`` is not run by the harness (it imports openai's and anthropic's
  types): ``LegacyHistory`` is a record of its two fields, and ``get_messages`` is what ART's
  is, ``_compat.messages_from_legacy_history`` from the release.

The trajectory groups are records with the fields ART's ``Trajectory`` and ``TrajectoryGroup``
give this path (``trajectories``, ``reward``, ``messages_and_choices``, ``tools``,
``additional_histories``, ``exchanges`` empty: the legacy history path, which every release
has). Each trajectory's completion is one token id unique to its group and place, so each
datum's advantages map back to the reward they came from.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from types import ModuleType, SimpleNamespace
from typing import Any

PROMPT = (11, 12, 13)
COMPLETION_LEN = 3
STRIDE = 10_000  # completion ids: FIRST_ID + group * STRIDE + index (groups of up to 10,000)
FIRST_ID = 100_000
STAND_INS = (
    "tinker (Datum, ModelInput, TensorData: records)",
    "openai Choice (a record of the completion's token ids)",
    "the renderer (the prompt's token ids)",
    "LegacyHistory (trajectories/__init__.py, not run: a record of its two fields)",
)


class _Record(SimpleNamespace):
    """A stand-in that holds what ART gives it."""


def _stand_in_tinker() -> ModuleType:
    module = ModuleType("tinker")
    module.Datum = _Record  # type: ignore[attr-defined]
    module.ModelInput = SimpleNamespace(from_ints=lambda tokens: list(tokens))  # type: ignore[attr-defined]
    module.TensorData = SimpleNamespace(from_torch=lambda tensor: tensor)  # type: ignore[attr-defined]
    return module


class _Renderer:
    """tinker_cookbook's renderer, as far as the legacy path uses it."""

    def build_generation_prompt(self, messages: list[dict[str, Any]]) -> Any:
        return SimpleNamespace(to_ints=lambda: list(PROMPT))


# One prepared data.py per tree: the search calls the path on dozens of inputs.
_PREPARED: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def data_module(art: Any) -> Any:
    """``art/tinker_native/data.py`` loaded whole, its boundary names replaced (module doc)."""
    if art not in _PREPARED:
        data = art.load("tinker_native/data.py")
        compat = art.load("trajectories/_compat.py")
        data.tinker = _stand_in_tinker()
        data.LegacyHistory = _Record
        data.get_messages = compat.messages_from_legacy_history
        choice = type("Choice", (data.Choice,), {"__new__": lambda cls, **kw: object.__new__(cls)})
        choice.__init__ = lambda self, **kw: self.__dict__.update(kw)  # type: ignore[misc]
        _PREPARED[art] = (data, choice)
    return _PREPARED[art]


def completion_id(group: int, index: int) -> int:
    return FIRST_ID + group * STRIDE + index


def trajectory_groups(choice: type, groups: Sequence[Sequence[float]]) -> list[Any]:
    """Records shaped like ART's ``TrajectoryGroup``s, one per reward list."""
    out = []
    for g, rewards in enumerate(groups):
        trajectories = []
        for i, reward in enumerate(rewards):
            token = SimpleNamespace(token=f"token_id:{completion_id(g, i)}", logprob=-0.5)
            made = choice(
                index=0,
                logprobs=SimpleNamespace(content=[token] * COMPLETION_LEN, refusal=None),
            )
            trajectories.append(
                SimpleNamespace(
                    reward=float(reward),
                    exchanges=[],
                    messages_and_choices=[{"role": "user", "content": f"prompt {g}"}, made],
                    tools=None,
                    additional_histories=[],
                )
            )
        out.append(SimpleNamespace(trajectories=trajectories))
    return out


def advantages(
    art: Any, groups: Sequence[Sequence[float]], *, normalize_advantages: bool
) -> list[list[list[float]] | None]:
    """Per group, per trajectory, the advantages of its masked tokens in the datums ART's
    ``trajectory_groups_to_datums`` builds (None: the group got no datum)."""
    data, choice = data_module(art)
    datums = data.trajectory_groups_to_datums(
        trajectory_groups(choice, groups), _Renderer(), None, normalize_advantages
    )
    out: list[list[list[float]] | None] = [None] * len(groups)
    for datum in datums:
        inputs = datum.loss_fn_inputs
        mask = inputs["mask"] > 0
        for token, value in zip(
            inputs["target_tokens"][mask].tolist(), inputs["advantages"][mask].tolist(), strict=True
        ):
            g, i = divmod(int(token) - FIRST_ID, STRIDE)
            per_group = out[g] = out[g] or [[] for _ in groups[g]]
            per_group[i].append(float(value))
    return out


def spans(got: list[list[list[float]] | None]) -> list[list[list[float] | None] | None]:
    """What a judge reads of :func:`advantages` (issue #53: a few floats a trajectory, JSON):
    per group (None: no datum), per trajectory, the least and greatest advantage of its tokens
    (None: no token; a value that is not finite, twice, when there is one)."""

    def span(tokens: list[float]) -> list[float] | None:
        if not tokens:
            return None
        bad = [v for v in tokens if not math.isfinite(v)]
        return [bad[0], bad[0]] if bad else [min(tokens), max(tokens)]

    return [None if g is None else [span(t) for t in g] for g in got]


def ran(art: Any) -> list[str]:
    """The call path entered, for the check's result."""
    return [
        f"{art.name}/tinker_native/data.py:trajectory_groups_to_datums (ART's caller of "
        "compute_advantages, entered as TinkerNativeBackend.train calls it)",
        f"{art.name}/trajectories/_compat.py:messages_from_legacy_history",
        "stand-ins: " + "; ".join(STAND_INS),
    ]


def one_group(run: Any) -> Any:
    """``run`` (groups -> per trajectory, its tokens' advantages) as a function of one group
    with ``compute_advantages``' signature: each trajectory's advantage (its first token's;
    0.0 for every trajectory of a group that got no datum)."""

    def compute(rewards: list[float], normalize_advantages: bool = True) -> list[float]:
        (got,) = run([list(rewards)], normalize_advantages=normalize_advantages)
        if got is None:
            return [0.0] * len(rewards)
        return [tokens[0] if tokens else float("nan") for tokens in got]

    return compute
