"""Item 9 on ART's own Tinker path: its packer, its ``TinkerService.train``, a stand-in client.

``art/tinker/service.py`` cannot be imported on CPU (it imports the Tinker server, fastapi,
mp_actors). So ``TinkerService.train`` is taken from the release's source (``_source``) and
compiled alone under ART's file name and lines, with its names from ART's own imports
(``loss_fn``, ``create_train_inputs``, ``packed_tensors_from_dir``, ``parse_prefix_tree_row``
...), except ``tinker``: a stand-in module whose ``Datum``/``ModelInput``/``TensorData``/
``AdamParams`` only hold what ART gives them. The training client is a stand-in too: it records
each ``forward_backward_custom_async`` (the datums and the ``masks`` ART passes to its loss),
runs ART's ``custom_loss_fn`` on zero logprobs, and counts ``optim_step_async`` calls.

The rows are ART's: ``packed_tensors_from_tokenized_results`` (pack.py) with ``pack_results``
as ART's Tinker path sets it (read by :func:`tinker_pack_results`), written to disk with
``packed_tensors_to_dir`` and read back by ``train`` itself.
"""

from __future__ import annotations

import ast
import asyncio
import math
import tempfile
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import _art_extract
import _source
import torch
from _tinker_masks import scored_contexts


@dataclass
class StandInClient:
    """Tinker's training client, as far as ``TinkerService.train`` uses it."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    optim_steps: int = 0
    calls: list[str] = field(default_factory=list)

    async def forward_backward_custom_async(self, *, data: list[Any], loss_fn: Any) -> Any:
        masks = loss_fn.keywords["masks"]
        self.rows.append({"masks": [m.clone() for m in masks], "datums": len(data)})
        self.calls.append(f"forward_backward({len(data)} datums)")
        logprobs = [torch.zeros(len(d.model_input), dtype=torch.float32) for d in data]
        loss, metrics = loss_fn(data, logprobs)  # ART's custom_loss_fn and loss_fn
        return _done(SimpleNamespace(metrics=metrics, loss=float(loss)))

    async def optim_step_async(self, *, adam_params: Any) -> Any:
        self.optim_steps += 1
        self.calls.append("optim_step")
        return _done(SimpleNamespace(metrics={}))


def _done(value: Any) -> asyncio.Future[Any]:
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future


def _stand_in_tinker() -> ModuleType:
    module = ModuleType("tinker")
    module.Datum = lambda **kw: SimpleNamespace(**kw)  # type: ignore[attr-defined]
    module.TensorData = SimpleNamespace(from_torch=lambda t: t)  # type: ignore[attr-defined]
    module.ModelInput = SimpleNamespace(from_ints=list)  # type: ignore[attr-defined]
    module.AdamParams = lambda **kw: SimpleNamespace(**kw)  # type: ignore[attr-defined]
    return module


# One compiled ``train`` per tree: a domain search runs it on dozens of inputs, and compiling it
# again for each was half of item 9's check.
_TRAIN: weakref.WeakKeyDictionary[Any, tuple[Any, str]] = weakref.WeakKeyDictionary()


def train_method(art: Any) -> tuple[Any, str]:
    """``TinkerService.train`` from the release's source, compiled alone; and where it is."""
    if art not in _TRAIN:
        _TRAIN[art] = _train_method(art)
    return _TRAIN[art]


def _train_method(art: Any) -> tuple[Any, str]:
    relpath = "tinker/service.py"
    text = art.source(relpath)
    service = _source.class_named(text, "TinkerService")
    assert isinstance(service.node, ast.ClassDef)
    node = next(
        n for n in service.node.body if isinstance(n, ast.AsyncFunctionDef) and n.name == "train"
    )
    line = service.line + node.lineno - 1
    fn, first = _art_extract.method(art, relpath, line, overrides={"tinker": _stand_in_tinker()})
    return fn, f"{art.name}/{relpath}:{first}"


def tinker_pack_results(art: Any) -> tuple[bool | None, str]:
    """``pack_results`` on ART's Tinker path, read with ``ast``: TinkerBackend subclasses
    LocalBackend without setting ``_supports_result_packing``; LocalBackend's ``__init__`` sets
    it; ``_get_packed_tensors`` passes it as ``pack_results``. None when any link is missing."""
    backend, local = art.source("tinker/backend.py"), art.source("local/backend.py")
    if not backend or not local:
        return None, "tinker/backend.py or local/backend.py not in this release"
    tinker_cls = _source.class_named(backend, "TinkerBackend")
    assert isinstance(tinker_cls.node, ast.ClassDef)
    bases = [ast.unparse(b) for b in tinker_cls.node.bases]
    if "LocalBackend" not in bases:
        return None, f"TinkerBackend's bases are {bases}, not LocalBackend"
    if _assigns(tinker_cls.node, "_supports_result_packing"):
        return None, "TinkerBackend sets _supports_result_packing itself"
    local_cls = _source.class_named(local, "LocalBackend")
    assert isinstance(local_cls.node, ast.ClassDef)
    values = [
        (local_cls.line + n.lineno - 1, n.value)
        for n in ast.walk(local_cls.node)
        if isinstance(n, ast.Assign)
        and any(ast.unparse(t) == "self._supports_result_packing" for t in n.targets)
    ]
    passes = [
        local_cls.line + n.lineno - 1
        for n in ast.walk(local_cls.node)
        if isinstance(n, ast.keyword)
        and n.arg == "pack_results"
        and ast.unparse(n.value) == "self._supports_result_packing"
    ]
    if len(values) != 1 or not passes or not isinstance(values[0][1], ast.Constant):
        return None, "LocalBackend's _supports_result_packing is not one constant passed on"
    line, value = values[0]
    assert isinstance(value, ast.Constant)
    return bool(value.value), (
        f"TinkerBackend({', '.join(bases)}) does not set _supports_result_packing; "
        f"{art.name}/local/backend.py:{line} sets it to {value.value!r} and L{passes[0]} passes "
        "it as pack_results"
    )


def _assigns(cls: ast.ClassDef, attr: str) -> bool:
    return any(
        isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.ctx, ast.Store)
        for n in ast.walk(cls)
    )


@dataclass
class Record:
    """The fields of ART's ``TokenizedResult`` that its packer reads."""

    token_ids: list[int]
    input_pos: list[int]
    assistant_mask: list[int]
    logprobs: list[float]
    advantage: float
    weight: float
    prompt_id: int
    prompt_length: int
    pixel_values: None = None
    image_grid_thw: None = None
    moe_routed_experts: None = None


def two_branch_group(prompt_len: int) -> list[Record]:
    """One prompt of ``prompt_len`` tokens, two 3-token completions; ``prompt_length`` one
    short of the prompt, as tokenize.py sets it (the shareable part)."""
    prompt = list(range(1000, 1000 + prompt_len))
    out = []
    for k, completion in enumerate(([21, 22, 23], [31, 32, 33])):
        n = prompt_len + len(completion)
        out.append(
            Record(
                token_ids=prompt + completion,
                input_pos=list(range(n)),
                assistant_mask=[0] * prompt_len + [1] * len(completion),
                logprobs=[math.nan] * prompt_len + [-0.5] * len(completion),
                advantage=1.0 if k == 0 else -1.0,
                weight=1 / 3,
                prompt_id=0,
                prompt_length=prompt_len - 1,
            )
        )
    return out


def run_train(art: Any, records: list[Record], seq_len: int, *, pack_results: bool) -> dict:
    """Pack ``records`` with ART's packer, run ART's ``TinkerService.train`` on them with the
    stand-in client; per row the group/parent ids, assistant mask and ART's datum masks."""
    pack = art.load("preprocessing/pack.py")
    types = art.load("types.py")
    packed = pack.packed_tensors_from_tokenized_results(
        records,
        seq_len,
        pad_token_id=0,
        truncate_long_results=False,
        pack_results=pack_results,
        verbosity=0,
    )
    train, where = train_method(art)
    client = StandInClient()
    state = SimpleNamespace(training_client=client, models={})

    async def _state() -> Any:
        return state

    async def _save(path: Any, training_client: Any) -> str:
        return str(path)

    with tempfile.TemporaryDirectory(prefix="artbot-tinker-") as tmp:
        disk = pack.packed_tensors_to_dir(packed, tmp)
        service = SimpleNamespace(
            _state_task=_state(),
            model_name="artbot-stand-in",
            _get_last_checkpoint_dir=lambda: Path(tmp) / "0000",
            _save_checkpoint=_save,
        )

        async def consume() -> int:
            n = 0
            async for _ in train(service, disk, types.TrainConfig(), {}):
                n += 1
            return n

        yields = asyncio.run(consume())
        rows = []
        for i, recorded in enumerate(client.rows):
            rows.append(
                {
                    "group_ids": packed["group_ids"][i].clone(),
                    "parent_ids": packed["parent_ids"][i].clone(),
                    "assistant_mask": packed["assistant_mask"][i].clone().to(torch.bool),
                    "masks": recorded["masks"],
                }
            )
    return {
        "rows": rows,
        "packed_rows": int(packed["tokens"].shape[0]),
        "optim_steps": client.optim_steps,
        "yields": yields,
        "calls": client.calls,
        "where": where,
    }


def wrong_context(run: dict[str, Any]) -> tuple[int, int]:
    """Trainable tokens scored in the wrong context over a :func:`run_train` run's rows, and
    trainable tokens."""
    wrong = total = 0
    for row in run["rows"]:
        masks = [(0, m) for m in row["masks"]]
        scored = scored_contexts(masks, row["group_ids"], row["parent_ids"], row["assistant_mask"])
        wrong += sum(not s["correct"] for s in scored)
        total += len(scored)
    return wrong, total
