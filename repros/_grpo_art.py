"""Item 3's path as ART runs it: ``tokenize_trajectory_groups``, then ART's packer (issue #50).

``art/preprocessing/tokenize.py`` and ``art/preprocessing/pack.py`` are imported whole from the
tree under test (artbot's harness), and one ART step is what ``LocalBackend._get_packed_tensors``
(local/backend.py, 0.5.20 L993-L1143) does with them: ``list(tokenize_trajectory_groups(
tokenizer, groups, allow_training_without_logprobs, scale_rewards))`` (every other argument at
the default the backend leaves it), nothing to train when that list is empty, else
``packed_tensors_from_tokenized_results(results, seq_len, pad_token_id=tokenizer.eos_token_id,
truncate_long_results=False, advantage_balance=..., pack_results=...)`` with the backend's
``seq_len`` (the longest result rounded up to 2048) and its ``pack_results``
(``_supports_result_packing``: False for LocalBackend, True for MegatronBackend). So a fix or a
fake anywhere in the function, in a helper of its file, or in how it reads ``scale_rewards``,
runs as in ART.

What ART calls on its inputs, read in each release (0.5.20, 0.5.21, 0.5.23), and the stand-ins
at that boundary (each named in the check's result):

- the tokenizer: on the legacy history path with vLLM token ids, ``tokenize_trajectory_groups``
  calls nothing on it; it is kept in each ``TokenizedResult`` (``_tokenizer``: ``decode`` of one
  id, for ``.tokens``), ``name_or_path`` is read on the exchanges path and ``eos_token_id`` by the
  backend (the pad id). :class:`Tokenizer` has those, and ``apply_chat_template`` (the template
  helpers' entry); any other attribute raises, naming it, so a patch that starts to use the
  tokenizer is "could not run", never judged on a guess.
- a trajectory's completion: a subclass of the ``Choice`` class ``tokenize.py`` itself imports
  (openai's, or the harness's stand-in for it) that can be made, with vLLM's token metadata in
  ``model_extra`` (``prompt_token_ids``, ``token_ids``) and one logprob per completion token in
  ``logprobs.content``, as ``attach_vllm_token_metadata_to_choice`` leaves a vLLM response;
- ``Trajectory``, ``TrajectoryGroup`` and ``LegacyHistory`` (``trajectories/__init__.py``, not run
  by the harness: it imports openai's and anthropic's types): records of the fields this path
  reads (a group iterates its trajectories, as ART's does).

Each trajectory's prompt is its group's (shared, so ``pack_results=True`` shares it in a prefix
tree) and its completion ids are unique to its group and place, so the packed advantages map back
to the group they came from.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

PROMPT_LEN = 6
COMPLETION_LENS = (3, 5, 8, 4, 6, 7, 5, 9)  # lengths differ, so the weights differ
FIRST_ID = 1_000_000  # prompt ids FIRST_ID * (group + 1) + i; completions + 1000 * (index + 1)
EOS = 2
STAND_INS = (
    "the tokenizer (decode, name_or_path, eos_token_id, apply_chat_template; nothing else)",
    "openai Choice (a made subclass of tokenize.py's own, with vLLM's token ids)",
    "Trajectory, TrajectoryGroup, LegacyHistory (trajectories/__init__.py, not run: records)",
)


class Tokenizer:
    """The tokenizer as far as this path uses it (module doc); anything else raises."""

    name_or_path = "artbot/tokenizer-stand-in"
    eos_token_id = EOS

    def decode(self, token_id: Any, **kwargs: Any) -> str:
        ids = token_id if isinstance(token_id, list) else [token_id]
        return "".join(f"<{int(i)}>" for i in ids)

    def apply_chat_template(
        self, messages: list[dict[str, Any]], tokenize: bool = True, **kwargs: Any
    ) -> Any:
        text = "".join(f"<|{m.get('role')}|>{m.get('content') or ''}" for m in messages)
        if kwargs.get("add_generation_prompt"):
            text += "<|assistant|>"
        return text if not tokenize else [ord(c) for c in text]

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"artbot's tokenizer stand-in has no {name!r}: ART asked for it")


class Group(list):  # type: ignore[type-arg]
    """ART's ``TrajectoryGroup`` as this path reads it: it iterates its trajectories."""

    exceptions: list[Any] = []
    metadata: dict[str, Any] = {}

    @property
    def trajectories(self) -> list[Any]:
        return list(self)


class _Record(SimpleNamespace):
    """A stand-in that holds what ART gives it (``LegacyHistory``)."""


_PREPARED: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def modules(art: Any) -> tuple[Any, Any, type]:
    """``tokenize.py`` and ``pack.py`` loaded whole, and the ``Choice`` subclass (module doc)."""
    if art not in _PREPARED:
        tokenize = art.load("preprocessing/tokenize.py")
        pack = art.load("preprocessing/pack.py")
        tokenize.LegacyHistory = _Record
        attrs = {
            "__new__": lambda cls, **kw: object.__new__(cls),
            "__init__": lambda self, **kw: self.__dict__.update(kw),
            "model_extra": None,  # a class attribute, so the instance's own value is read
        }
        choice = type("Choice", (tokenize.Choice,), attrs)
        _PREPARED[art] = (tokenize, pack, choice)
    value: tuple[Any, Any, type] = _PREPARED[art]
    return value


def token_ids(group: int, index: int) -> tuple[list[int], list[int]]:
    """The prompt (shared by the group) and the completion (unique) of one trajectory."""
    base = FIRST_ID * (group + 1)
    n = COMPLETION_LENS[index % len(COMPLETION_LENS)]
    return [base + i for i in range(PROMPT_LEN)], [base + 1000 * (index + 1) + k for k in range(n)]


def trajectory_groups(choice: type, groups: Sequence[Sequence[float]]) -> list[Group]:
    """Records shaped like ART's ``TrajectoryGroup``s, one per reward list."""
    out = []
    for g, rewards in enumerate(groups):
        trajectories = []
        for i, reward in enumerate(rewards):
            prompt, completion = token_ids(g, i)
            content = [
                SimpleNamespace(token=f"token_id:{t}", logprob=-0.5, model_extra=None)
                for t in completion
            ]
            made = choice(
                index=0,
                finish_reason="stop",
                logprobs=SimpleNamespace(content=content, refusal=None),
                model_extra={"prompt_token_ids": prompt, "token_ids": completion},
            )
            trajectories.append(
                SimpleNamespace(
                    reward=float(reward),
                    exchanges=[],
                    messages_and_choices=[{"role": "user", "content": f"prompt {g}"}, made],
                    tools=None,
                    additional_histories=[],
                    metadata={},
                    metrics={},
                )
            )
        out.append(Group(trajectories))
    return out


def step(
    art: Any,
    groups: Sequence[Sequence[float]],
    *,
    scale_rewards: bool,
    advantage_balance: float,
    pack_results: bool,
    allow_training_without_logprobs: bool = False,
) -> dict[str, Any]:
    """One ART step's groups through ART's tokenizer and packer: per group, the packed
    advantage of each of its assistant tokens (None: the group has none); ``trained`` False
    when no tokenized result is left (the backend skips the step)."""
    tokenize, pack, choice = modules(art)
    tokenizer = Tokenizer()
    results = list(
        tokenize.tokenize_trajectory_groups(
            tokenizer,
            trajectory_groups(choice, groups),
            allow_training_without_logprobs,
            scale_rewards,
        )
    )
    per_group: dict[int, list[float] | None] = {g: None for g in range(len(groups))}
    if not results:
        return {"trained": False, "groups": per_group}
    longest = max(len(r.token_ids) for r in results)
    packed = pack.packed_tensors_from_tokenized_results(
        results,
        math.ceil(longest / 2048) * 2048 if pack_results else longest,
        pad_token_id=tokenizer.eos_token_id,
        truncate_long_results=False,
        advantage_balance=advantage_balance,
        pack_results=pack_results,
        verbosity=0,
    )
    mask = packed["assistant_mask"].bool()
    tokens = packed["tokens"][mask].tolist()
    values = packed["advantages"][mask].tolist()
    for token, value in zip(tokens, values, strict=True):
        g = int(token) // FIRST_ID - 1
        if 0 <= g < len(groups):
            per_group[g] = (per_group[g] or []) + [float(value)]
    return {"trained": True, "groups": per_group}


def ran(art: Any) -> list[str]:
    """The call path entered, for the check's result."""
    return [
        f"{art.name}/preprocessing/tokenize.py:tokenize_trajectory_groups (the module imported "
        "whole, entered as LocalBackend._get_packed_tensors calls it)",
        f"{art.name}/preprocessing/pack.py:packed_tensors_from_tokenized_results "
        "(pack_results both ways: LocalBackend's False, MegatronBackend's True)",
        "stand-ins: " + "; ".join(STAND_INS),
    ]
