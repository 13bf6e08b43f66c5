"""ART's callers of ``loss_fn`` run whole on a CPU, for items 7, 8 and 801 (issue #50).

``_loss_path`` enters each step through one caller of ``loss_fn`` (the case's ``caller``):

- ``unsloth``: ``unsloth/train.py`` imported whole (``_art_whole``: Unsloth's training stack, TRL,
  PEFT and datasets stood in for where absent), ``get_compute_loss_fn(trainer)`` built by ART on
  artbot's stand-in trainer, and ART's ``compute_loss(model, inputs)`` called on each packed
  row's ``create_train_inputs(...)``, as ``run_unsloth_rl_training`` puts them on the trainer's
  queue. ``compute_loss`` runs every statement of its own: it pops the configs, moves the
  tensors, builds the attention bias, calls ART's ``calculate_logprobs`` (its chunked
  ``_calculate_logprobs``, in FP32; the reference model's under ``inference_mode`` with the
  adapter disabled when ``kl_penalty_coef`` is set) and ``loss_fn`` with its reduction (mean).
  The stand-ins at the boundary: the trainer (``model``, ``optimizer``'s param groups,
  ``accelerator`` on the CPU, ``_metrics``) and the PEFT model, whose forward returns the hidden
  states (``UNSLOTH_RETURN_HIDDEN_STATES``) ``table[token]`` in the model's dtype (the case's
  ``new dtype``; adapter disabled: 0.9 of it) and whose output embedding is the identity, so
  ART's ``lm_head`` matmul gives the table's logits exactly. ART's backend requires the packed
  length to be a multiple of ``logprob_calculation_chunk_size`` (by default it rounds it up to
  a multiple of 2,048, the chunk 1,024): the row is rounded up to a multiple of 16
  (:func:`packed_length`) and the chunk is the largest power of two up to 1,024 dividing it.
- ``tinker``: ``tinker/service.py`` imported whole, a ``TinkerService`` built as ART builds it,
  and ``service.train(disk, config, dev_config)`` called on ART's packed tensors written with
  ``packed_tensors_to_dir``, as LocalBackend calls it: ART splits each row into its datums, and
  artbot's stand-in Tinker training client (``tinker`` is the client library, not importable
  here: ``_tinker_train``'s stand-in) computes each datum's logprobs of its ``target_tokens``
  from the same table (in the case's dtype, returned in FP32 as Tinker's ``TensorData``), calls
  ART's ``custom_loss_fn`` on them (which scatters them into the row and calls ``loss_fn``,
  reduction mean) and runs the backward Tinker's server would.
- ``megatron``: not run. ``reduce_loss`` is a closure of ``megatron/train.py``'s training step,
  called only by Megatron-Core's pipeline schedule with the output of ART's forward over Megatron
  model chunks (DDP grad buffers, the parallel topology, the selective LM head): none of it
  exists without Megatron-Core, so a stand-in would be the whole step. Its call is entered at
  ``loss_fn`` with its arguments (``reduction="sum"``, the new logprobs in the head's dtype) on
  ``create_train_inputs``' row, by ``_loss_path``; a fix or fake in ``megatron/train.py`` itself
  is not seen.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import _art_whole
import _tinker_train
import torch

ART_CHUNK = 1024  # ART's default logprob_calculation_chunk_size
REFERENCE_SCALE = 0.9  # the stand-in model's logits with its adapter disabled
RUN = ("unsloth", "tinker")  # the callers run here; megatron's is entered at loss_fn
REDUCTION = {"unsloth": "mean", "tinker": "mean", "megatron": "sum"}
NOT_RUN = (
    "Megatron's reduce_loss is not run: a closure of its training step that only Megatron-Core's "
    "pipeline schedule calls, over Megatron model chunks; entered at loss_fn with its arguments"
)


def packed_length(case: dict[str, Any]) -> int:
    """The packer's row length for the case's caller: Unsloth's rounded up to a multiple of 16
    (ART's backend makes it a multiple of the chunk), the others' as the case says."""
    row = int(case["row tokens"])
    return -(-row // 16) * 16 if case["caller"] == "unsloth" else row


def chunk_for(row: int) -> int:
    """The largest power of two up to ART's default chunk that divides ``row`` (ART's backend
    requires the packed length to be a multiple of the chunk)."""
    chunk = ART_CHUNK
    while row % chunk:
        chunk //= 2
    return chunk


@dataclass
class RowResult:
    """What a caller made of one packed row: the loss it returned and ART's row inputs."""

    loss: torch.Tensor
    inputs: dict[str, Any]


class _PeftModel(torch.nn.Module):
    """Unsloth's PEFT model as ``compute_loss`` uses it (artbot's stand-in)."""

    def __init__(self, table: torch.Tensor, dtype: torch.dtype) -> None:
        super().__init__()
        self.table = table
        self.head = torch.nn.Linear(table.shape[1], table.shape[0], bias=False, dtype=dtype)
        with torch.no_grad():
            self.head.weight.copy_(torch.eye(table.shape[0], dtype=dtype))
        self.head.weight.requires_grad_(False)
        self.compute_dtype = dtype
        self.adapter = True

    def forward(self, input_ids: torch.Tensor, causal_mask: Any = None, **_: Any) -> Any:
        if self.adapter:
            hidden = self.table[input_ids]
        else:
            hidden = REFERENCE_SCALE * self.table.detach()[input_ids]
        return SimpleNamespace(logits=hidden.to(self.compute_dtype))

    def get_output_embeddings(self) -> torch.nn.Module:
        return self.head

    @contextlib.contextmanager
    def disable_adapter(self) -> Iterator[None]:
        self.adapter = False
        try:
            yield
        finally:
            self.adapter = True


class _Accelerator:
    device = torch.device("cpu")

    def unwrap_model(self, model: Any, keep_fp32_wrapper: bool = True) -> Any:
        return model


class _ModelClient(_tinker_train.StandInClient):
    """Tinker's training client computing each datum's logprobs from the step's table."""

    model: tuple[torch.Tensor, torch.dtype, bool] | None = None
    results: list[RowResult]

    async def forward_backward_custom_async(self, *, data: list[Any], loss_fn: Any) -> Any:
        assert self.model is not None
        table, dtype, grad = self.model
        logprobs = []
        for datum in data:
            ids = torch.tensor(datum.model_input, dtype=torch.long)
            target = torch.as_tensor(datum.loss_fn_inputs["target_tokens"]).long()
            logits = table[ids].to(dtype).float()
            lp = torch.log_softmax(logits, -1).gather(-1, target[:, None]).squeeze(-1)
            logprobs.append(lp)
        loss, metrics = loss_fn(data, logprobs)  # ART's custom_loss_fn, then loss_fn
        if grad:
            loss.backward()
        self.results.append(RowResult(loss, loss_fn.keywords["inputs"]))
        self.calls.append(f"forward_backward({len(data)} datums)")
        return _tinker_train._done(SimpleNamespace(metrics=metrics, loss=float(loss)))


@dataclass
class Callers:
    """The callers' modules, loaded whole for one search, and Tinker's service and client."""

    unsloth: Any
    tinker: Any
    service: Any
    client: _ModelClient
    loop: asyncio.AbstractEventLoop
    folder: Path
    whole: Any  # the import context: ``whole.said()``, the stand-ins used so far

    def rows(
        self,
        caller: str,
        path: Any,
        packed: dict[str, Any],
        table: torch.Tensor,
        case: dict[str, Any],
        config: dict[str, Any],
    ) -> list[RowResult]:
        """Each packed row through ``caller`` (``unsloth`` or ``tinker``), in row order."""
        dtype = path_dtype(case)
        if caller == "unsloth":
            return self._unsloth(path, packed, table, dtype, case, config)
        return self._tinker(path, packed, table, dtype, case, config)

    def _unsloth(
        self,
        path: Any,
        packed: dict[str, Any],
        table: torch.Tensor,
        dtype: torch.dtype,
        case: dict[str, Any],
        config: dict[str, Any],
    ) -> list[RowResult]:
        model = _PeftModel(table, dtype)
        trainer = SimpleNamespace(
            model=model,
            optimizer=SimpleNamespace(param_groups=[{"lr": 0.0}]),
            accelerator=_Accelerator(),
            _metrics={"train": _Metrics()},
        )
        compute_loss = self.unsloth.get_compute_loss_fn(trainer)
        dev_config = dict(config, logprob_calculation_chunk_size=chunk_for(packed_length(case)))
        train_config = path.types.TrainConfig(
            learning_rate=1e-5, kl_penalty_coef=float(config.get("kl_penalty_coef") or 0.0)
        )
        out = []
        saved = os.environ.get("UNSLOTH_RETURN_HIDDEN_STATES")
        try:
            for i in range(int(packed["tokens"].shape[0])):
                inputs = path.inputs.create_train_inputs(packed, i, train_config, dev_config, False)
                row = {k: v for k, v in inputs.items() if isinstance(v, torch.Tensor)}
                loss = compute_loss(model, inputs)
                if case["grad"]:
                    loss.backward()
                out.append(RowResult(loss, row))
        finally:
            if saved is None:
                os.environ.pop("UNSLOTH_RETURN_HIDDEN_STATES", None)
            else:
                os.environ["UNSLOTH_RETURN_HIDDEN_STATES"] = saved
        return out

    def _tinker(
        self,
        path: Any,
        packed: dict[str, Any],
        table: torch.Tensor,
        dtype: torch.dtype,
        case: dict[str, Any],
        config: dict[str, Any],
    ) -> list[RowResult]:
        client = self.client
        client.reset()
        client.results = []
        client.model = (table, dtype, bool(case["grad"]))
        disk = path.pack.packed_tensors_to_dir(packed, str(self.folder / "tensors"))

        async def consume() -> None:
            train_config = path.types.TrainConfig(learning_rate=1e-5)
            async for _ in self.service.train(disk, train_config, config, False):
                pass

        with contextlib.redirect_stdout(io.StringIO()):  # ART's log_timing lines
            self.loop.run_until_complete(consume())
        return list(client.results)


class _Metrics(dict):  # type: ignore[type-arg]
    """``trainer._metrics["train"]``: a defaultdict(list) (TRL's), kept small."""

    def __missing__(self, key: str) -> list[float]:
        self[key] = []
        return self[key]


def path_dtype(case: dict[str, Any]) -> torch.dtype:
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[case["new dtype"]]


@contextlib.contextmanager
def loaded(art: Any) -> Iterator[Callers]:
    """``unsloth/train.py`` and ``tinker/service.py`` imported whole from ``art``'s tree (the
    boundary stood in for), one ``TinkerService`` built as ART builds it, for one search."""
    client = _ModelClient()
    client.results = []
    saved = sys.modules.get("tinker")
    sys.modules["tinker"] = _tinker_train._stand_in_tinker(client)
    loop = asyncio.new_event_loop()
    try:
        with (
            _art_whole.whole(art) as whole,
            tempfile.TemporaryDirectory(prefix="artbot-loss-") as tmp,
        ):
            unsloth = whole.load("unsloth/train.py")
            tinker = whole.load("tinker/service.py")
            service = tinker.TinkerService(
                model_name="artbot-stand-in",
                base_model="artbot/stand-in-base",
                config={"tinker_args": {}},
                output_dir=str(Path(tmp) / "model"),
            )
            yield Callers(unsloth, tinker, service, client, loop, Path(tmp), whole)
    finally:
        loop.close()
        if saved is None:
            sys.modules.pop("tinker", None)
        else:
            sys.modules["tinker"] = saved
