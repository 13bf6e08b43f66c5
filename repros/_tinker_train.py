"""Item 9 on ART's own Tinker path: its packer, its ``TinkerService``, a stand-in Tinker client.

``art/tinker/service.py`` is imported whole (:func:`loaded`, ``_art_whole``): every statement of
it and of what it imports (the Tinker server, ``mp_actors``) runs, with stand-ins only at the
boundary: the third-party packages its import needs and no checked path runs (fastapi, uvicorn,
nest_asyncio, setproctitle, tblib, the Tinker cookbook's renderers: ``_art_whole``) and Tinker's
client library, ``tinker`` (:func:`_stand_in_tinker`): ``Datum``/``ModelInput``/``TensorData``/
``AdamParams`` only hold what ART gives them, and ``ServiceClient`` hands ART the stand-in
training client. Nothing of ART's own code is replaced.

A train call is entered as LocalBackend enters it (``service.train(disk, config, dev_config,
verbose)``) on a ``TinkerService`` ART builds: its ``_state_task`` runs ART's ``_get_state``,
which creates the training client and saves checkpoint ``0000`` (ART's ``_save_checkpoint``, in
a temporary ``output_dir``). The training client records each ``forward_backward_custom_async``
(the datums' ``model_input`` and ``target_tokens`` and the ``masks`` ART passes to its loss),
runs ART's ``custom_loss_fn`` on zero logprobs, and counts the ``optim_step_async`` calls ART
makes: the optimizer steps.

The rows are ART's: ``packed_tensors_from_tokenized_results`` (pack.py) with ``pack_results``
as the caller gives it (ART's Tinker path's: run by ``_tinker_check.tinker_pack_results``),
written to disk with ``packed_tensors_to_dir`` and read back by ``train`` itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import io
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import _art_whole
import torch
from _grpo_pack import TokenizedRecord


@dataclass
class StandInClient:
    """Tinker's training client, as far as ``TinkerService`` uses it."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    optim_steps: int = 0
    calls: list[str] = field(default_factory=list)
    model_id: str = "artbot-stand-in"

    def reset(self) -> None:
        """Forget the previous train call (ART keeps one client for the service's life)."""
        self.rows.clear()
        self.calls.clear()
        self.optim_steps = 0

    async def forward_backward_custom_async(self, *, data: list[Any], loss_fn: Any) -> Any:
        masks = loss_fn.keywords["masks"]
        self.rows.append(
            {
                "masks": [m.clone() for m in masks],
                "datums": len(data),
                "inputs": [d.model_input for d in data],  # ModelInput.from_ints: the list
                "targets": [d.loss_fn_inputs["target_tokens"] for d in data],
            }
        )
        self.calls.append(f"forward_backward({len(data)} datums)")
        logprobs = [torch.zeros(len(d.model_input), dtype=torch.float32) for d in data]
        loss, metrics = loss_fn(data, logprobs)  # ART's custom_loss_fn and loss_fn
        return _done(SimpleNamespace(metrics=metrics, loss=float(loss)))

    async def optim_step_async(self, *, adam_params: Any) -> Any:
        self.optim_steps += 1
        self.calls.append("optim_step")
        return _done(SimpleNamespace(metrics={}))

    async def save_state_async(self, name: str) -> Any:
        return _done(SimpleNamespace(path=f"stand-in://{name}/state"))

    async def save_weights_for_sampler_async(self, name: str) -> Any:
        return _done(SimpleNamespace(path=f"stand-in://{name}/sampler"))


def _done(value: Any) -> asyncio.Future[Any]:
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future


class _Tinker(ModuleType):
    """Tinker's client library: the names ART calls, and a placeholder class for any other
    name ART's modules take at import (annotations, ``tinker.SamplingClient``)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        made = type(name, (), {"__module__": "tinker"})
        setattr(self, name, made)
        return made


class _ServiceClient:
    """``tinker.ServiceClient``: hands ART the client of :attr:`client`."""

    client: StandInClient

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def create_rest_client(self) -> Any:
        return SimpleNamespace()

    async def create_lora_training_client_async(self, **kwargs: Any) -> StandInClient:
        return self.client

    async def create_training_client_from_state_with_optimizer_async(
        self, **kwargs: Any
    ) -> StandInClient:
        return self.client


def _stand_in_tinker(client: StandInClient) -> ModuleType:
    module = _Tinker("tinker")
    module.__path__ = []  # a package: ``tinker.lib....`` is artbot's isolation stand-in
    module.Datum = lambda **kw: SimpleNamespace(**kw)  # type: ignore[attr-defined]
    module.TensorData = SimpleNamespace(from_torch=lambda t: t)  # type: ignore[attr-defined]
    module.ModelInput = SimpleNamespace(from_ints=list)  # type: ignore[attr-defined]
    module.AdamParams = lambda **kw: SimpleNamespace(**kw)  # type: ignore[attr-defined]
    module.ServiceClient = type("ServiceClient", (_ServiceClient,), {"client": client})  # type: ignore[attr-defined]
    return module


@dataclass
class Loaded:
    """``tinker/service.py`` imported whole, one ``TinkerService`` as ART builds it (the Tinker
    path's ``tinker_args`` config, ``output_dir`` a temporary folder), the event loop its train
    calls run on (ART keeps one service per model and calls ``train`` once per step), the
    training client ART's ``_get_state`` gets, and the stand-ins the import used."""

    art: Any
    module: Any
    service: Any
    folder: Path
    loop: asyncio.AbstractEventLoop
    client: StandInClient
    said: list[str]

    @functools.cached_property
    def where(self) -> str:
        """Where ``TinkerService.train`` is: ``art/tinker/service.py:<first line>``."""
        line = inspect.getsourcelines(self.module.TinkerService.train)[1]
        return f"{self.art.name}/tinker/service.py:{line}"

    def run(self, awaitable: Any) -> Any:
        with contextlib.redirect_stdout(io.StringIO()):  # ART's log_timing lines
            return self.loop.run_until_complete(awaitable)


@contextlib.contextmanager
def loaded(art: Any) -> Iterator[Loaded]:
    """``art/tinker/service.py`` imported whole inside ``art``'s context, ``tinker`` stood in."""
    client = StandInClient()
    saved = sys.modules.get("tinker")
    sys.modules["tinker"] = _stand_in_tinker(client)
    loop = asyncio.new_event_loop()
    try:
        with (
            _art_whole.whole(art) as whole,
            tempfile.TemporaryDirectory(prefix="artbot-tinker-") as tmp,
        ):
            module = whole.load("tinker/service.py")
            service = module.TinkerService(
                model_name="artbot-stand-in",
                base_model="artbot/stand-in-base",
                config={"tinker_args": {}},
                output_dir=str(Path(tmp) / "model"),
            )
            stood_in = {key.split(".")[0] for key in sys.modules} & set(
                _art_whole.BOUNDARY_PACKAGES
            )
            absent = ", ".join(sorted(stood_in - whole.real))
            said = ["tinker (the client)", *([f"{absent} (not importable here)"] if absent else [])]
            yield Loaded(art, module, service, Path(tmp), loop, client, said)
    finally:
        loop.close()
        if saved is None:
            sys.modules.pop("tinker", None)
        else:
            sys.modules["tinker"] = saved


def run_train(
    svc: Loaded,
    records: list[TokenizedRecord],
    seq_len: int,
    *,
    pack_results: bool,
    config: dict[str, Any] | None = None,
    verbose: bool = False,
) -> dict:
    """Pack ``records`` with ART's packer and make one train call on ART's service as
    LocalBackend makes it (the packed tensors written to the model's ``tensors`` folder, then
    ``service.train(disk, config, dev_config, verbose)``, ``config`` ART's ``TrainConfig`` with
    the fields given); per row its tokens and what ART sent Tinker for it (each datum's
    ``model_input`` and ``target_tokens``, and the masks its loss writes back through), and the
    optimizer steps the call took."""
    pack = svc.art.load("preprocessing/pack.py")
    types = svc.art.load("types.py")
    packed = pack.packed_tensors_from_tokenized_results(
        records,
        seq_len,
        pad_token_id=0,
        truncate_long_results=False,
        pack_results=pack_results,
        verbosity=0,
    )
    client = svc.client
    client.reset()
    disk = pack.packed_tensors_to_dir(packed, str(svc.folder / "tensors"))

    async def consume() -> int:
        n = 0
        train_config = types.TrainConfig(**(config or {}))
        async for _ in svc.service.train(disk, train_config, {}, verbose):
            n += 1
        return n

    yields = svc.run(consume())
    # One forward_backward call a packed row, in row order, as ART makes them.
    rows = [
        {
            "tokens": tokens.clone(),
            "masks": recorded["masks"],
            "inputs": recorded["inputs"],
            "targets": recorded["targets"],
        }
        for tokens, recorded in zip(packed["tokens"], client.rows, strict=False)
    ]
    return {
        "rows": rows,
        "packed_rows": int(packed["tokens"].shape[0]),
        "optim_steps": client.optim_steps,
        "yields": yields,
        "calls": list(client.calls),
        "where": svc.where,
    }
