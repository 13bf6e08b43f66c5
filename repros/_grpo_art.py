"""Item 3's path as ART runs it: ``LocalBackend._prepare_training_batch`` (issue #50).

``art/local/backend.py`` is imported whole from the tree under test (:func:`loaded`,
``_art_whole``), with every ART module it imports (``preprocessing/tokenize.py``,
``preprocessing/pack.py``, ``_backend_training.py``, ``model.py``, ...); stand-ins only for the
third-party packages at the boundary that are not installed here (``_art_whole``: tqdm, polars,
vLLM's, ...; artbot's isolation: transformers, openai). One ART step is entered where
``LocalBackend._train_model`` enters it: ``dev_config`` is built by ART's own
``build_rl_train_configs`` (what ``LocalBackend.train`` passes it: ``advantage_balance``,
``scale_rewards``, ``allow_training_without_logprobs``), then
``await backend._prepare_training_batch(model, groups, dev_config, include_moe_routing=False)``
runs ART's ``_get_packed_tensors``: ``tokenize_trajectory_groups``, the backend's own checks
(results too long, nothing to train), ``packed_tensors_from_tokenized_results`` with the
backend's ``pack_results``, and the batch record. So a fix or a fake in the tokenizer, the
packer, a helper of their files, or the backend's caller runs as in ART; no step
(``_prepare_training_batch`` returns None) is ``trained`` False.

The backend is a ``LocalBackend`` as ART builds it (``LocalBackend(path=...)``, a temporary
folder): ``pack_results`` False, ``packed_sequence_length`` unset (ART's default: the longest
result rounded up to 2048). For ``pack_results`` True, the same backend with the packing
settings ``MegatronBackend.__init__`` gives it (``_supports_result_packing`` True, an explicit
``packed_sequence_length``: 8192, without chunk alignment); MegatronBackend itself is not run (its
``_prepare_training_batch`` packs on a distributed runtime).

What ART calls at the boundary, and the stand-ins (each named in the check's result):

- the model: ART's own ``TrainableModel`` (``model.py``, run), its ``_internal_config`` giving
  ``init_args.max_seq_length`` 32768 (read by ``_model_max_sequence_length``; otherwise ART
  asks Hugging Face for the model's config);
- the tokenizer: the backend's cache (``_tokenizers``) holds it under ART's own key
  (``_tokenizer_cache_key``), as after ART's first ``from_pretrained``. On the legacy history
  path with vLLM token ids ``tokenize_trajectory_groups`` calls nothing on it; it is kept in
  each ``TokenizedResult`` (``decode``), ``name_or_path`` is read on the exchanges path and
  ``eos_token_id`` by the backend (the pad id). :class:`Tokenizer` has those, and
  ``apply_chat_template``; any other attribute raises, naming it, so a patch that starts to use
  the tokenizer is "could not run", never judged on a guess;
- a trajectory's completion: a subclass of the ``Choice`` class ``tokenize.py`` itself imports
  (openai's, or the harness's stand-in for it) that can be made, with vLLM's token metadata in
  ``model_extra`` (``prompt_token_ids``, ``token_ids``) and one logprob per completion token in
  ``logprobs.content``, as ``attach_vllm_token_metadata_to_choice`` leaves a vLLM response;
- ``Trajectory``, ``TrajectoryGroup`` and ``LegacyHistory`` (``trajectories/__init__.py``, not run
  by the harness: it imports openai's and anthropic's types): records of the fields this path
  reads (a group iterates its trajectories and collects no packing shape).

Each trajectory's prompt is its group's (shared, so ``pack_results=True`` shares it in a prefix
tree) and its completion ids are unique to its group and place, so the packed advantages map back
to the group they came from.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import _art_whole

PROMPT_LEN = 6
COMPLETION_LENS = (3, 5, 8, 4, 6, 7, 5, 9)  # lengths differ, so the weights differ
FIRST_ID = 1_000_000  # prompt ids FIRST_ID * (group + 1) + i; completions + 1000 * (index + 1)
EOS = 2
STAND_INS = (
    "the tokenizer (decode, name_or_path, eos_token_id, apply_chat_template; nothing else), "
    "in the backend's tokenizer cache under ART's key",
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
    _collect_packing_shape = False

    @property
    def trajectories(self) -> list[Any]:
        return list(self)


class _Record(SimpleNamespace):
    """A stand-in that holds what ART gives it (``LegacyHistory``)."""


MAX_SEQ_LENGTH = 32768  # the model's max_seq_length (init_args), ART's Qwen-size default
MEGATRON_PACKED_LENGTH = 8192  # packed_sequence_length for the MegatronBackend settings


@dataclass
class Boundary:
    """What one training batch needs of ART, loaded in an open ``_art_whole.whole`` context
    (``training``: ``_backend_training.py``; ``model``: ART's ``TrainableModel``; ``key``: the
    tokenizer's cache key, ART's), and the stand-ins at its boundary (module doc)."""

    training: Any
    choice: type
    model: Any
    key: Any
    loop: asyncio.AbstractEventLoop

    def backend(self, cls: Any, **kwargs: Any) -> Any:
        """``cls(**kwargs)`` as ART builds it, the tokenizer in its cache (module doc)."""
        with contextlib.redirect_stdout(io.StringIO()):
            made = cls(**kwargs)
        made._tokenizers[self.key] = Tokenizer()
        return made

    def prepare(self, backend: Any, groups: Sequence[Sequence[float]], **train: Any) -> Any:
        """``backend._prepare_training_batch`` on ``groups`` with the ``dev_config`` ART's
        ``build_rl_train_configs`` makes of ``train`` (``LocalBackend.train``'s arguments): the
        batch, or None (no step)."""
        _, dev_config = self.training.build_rl_train_configs(learning_rate=5e-6, **train)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            return self.loop.run_until_complete(
                backend._prepare_training_batch(
                    self.model,
                    trajectory_groups(self.choice, groups),
                    dev_config,
                    include_moe_routing=False,
                )
            )


def boundary(load: Any, folder: Path, loop: asyncio.AbstractEventLoop) -> Boundary:
    """A :class:`Boundary` from ART's modules (``load``: the open whole context's), the model's
    files under ``folder``."""
    backend = load("local/backend.py")
    tokenize = load("preprocessing/tokenize.py")
    tokenize.LegacyHistory = _Record
    attrs = {
        "__new__": lambda cls, **kw: object.__new__(cls),
        "__init__": lambda self, **kw: self.__dict__.update(kw),
        "model_extra": None,  # a class attribute, so the instance's own value is read
    }
    choice = type("Choice", (tokenize.Choice,), attrs)
    model = load("model.py").TrainableModel(
        name="artbot-model",
        run_name="artbot-run",
        project="artbot",
        base_model="artbot/stand-in-base",
        base_path=str(folder),
        _internal_config={"init_args": {"max_seq_length": MAX_SEQ_LENGTH}},
    )
    key = backend._tokenizer_cache_key(model.base_model, model._internal_config)
    return Boundary(load("_backend_training.py"), choice, model, key, loop)


@dataclass
class Loaded:
    """``local/backend.py`` imported whole (module doc): the boundary, a backend per
    ``pack_results``, and the whole context (for the stand-ins it used)."""

    boundary: Boundary
    backends: dict[bool, Any]
    whole: Any


_LOADED: dict[int, Loaded] = {}


@contextlib.contextmanager
def loaded(art: Any) -> Iterator[Loaded]:
    """``local/backend.py`` imported whole inside ``art``'s context, a ``LocalBackend`` built
    as ART builds it, ART's ``TrainableModel``; :func:`step` uses it while the context is open."""
    loop = asyncio.new_event_loop()
    try:
        with (
            _art_whole.whole(art) as whole,
            tempfile.TemporaryDirectory(prefix="artbot-local-") as tmp,
        ):
            edge = boundary(whole.load, Path(tmp), loop)
            local = whole.load("local/backend.py").LocalBackend
            backends = {}
            for pack_results in (False, True):
                made = edge.backend(local, path=str(Path(tmp) / "art"))
                if pack_results:  # as MegatronBackend.__init__ sets them (module doc)
                    made._requires_explicit_packed_sequence_length = True
                    made._packed_sequence_length_requires_chunk_alignment = False
                    made._supports_result_packing = True
                backends[pack_results] = made
            _LOADED[id(art)] = Loaded(edge, backends, whole)
            try:
                yield _LOADED[id(art)]
            finally:
                _LOADED.pop(id(art), None)
    finally:
        loop.close()


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
    """One ART step's groups through ``LocalBackend._prepare_training_batch`` (module doc),
    inside :func:`loaded`: per group, the packed advantage of each of its assistant tokens
    (None: the group has none); ``trained`` False when the backend skips the step."""
    use = _LOADED.get(id(art))
    if use is None:
        raise RuntimeError("_grpo_art.step runs inside _grpo_art.loaded(art)")
    batch = use.boundary.prepare(
        use.backends[pack_results],
        groups,
        advantage_balance=advantage_balance,
        scale_rewards=scale_rewards,
        allow_training_without_logprobs=allow_training_without_logprobs,
        packed_sequence_length=MEGATRON_PACKED_LENGTH if pack_results else None,
    )
    per_group: dict[int, list[float] | None] = {g: None for g in range(len(groups))}
    if batch is None:
        return {"trained": False, "groups": per_group}
    packed = batch.payload
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
    use = _LOADED.get(id(art))
    boundary = use.whole.said() if use is not None else []
    return [
        f"{art.name}/local/backend.py:LocalBackend._prepare_training_batch (the module imported "
        "whole, entered as LocalBackend._train_model calls it, dev_config from ART's "
        "build_rl_train_configs) -> _get_packed_tensors -> tokenize_trajectory_groups, "
        "packed_tensors_from_tokenized_results",
        "pack_results both ways: LocalBackend as built (False), and with MegatronBackend's "
        f"packing settings (True, packed_sequence_length {MEGATRON_PACKED_LENGTH})",
        "stand-ins: " + "; ".join([*STAND_INS, *boundary]),
    ]
