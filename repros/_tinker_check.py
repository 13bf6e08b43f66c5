"""Item 9's check against ART's own code: what ``check_art`` in ``item09_tinker_masks`` returns.

Kept apart from the item's script so that it stays readable: the claims, their details and
the source lines they stand on, from runs of ART's packer and ``TinkerService.train``
(``_tinker_train``) and from ART's source (``_source``, ``_evidence``). Each claim's verdict is
its split property's (``_tinker_property`` measures, ``_tinker_oracle`` judges); the details
measure the audit's two-branch group the same way and count with the same judge. Nothing here
is used by the script's own measurement.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import _evidence
import _grpo_art
import _source
import _tinker_oracle
import _tinker_property
import _tinker_train


def check(art: Any) -> dict[str, Any]:
    """``check_art``'s result for ``art``, claim by claim (what is run: its docstring), with
    ``tinker/service.py`` imported whole (``_tinker_train.loaded``)."""
    with _tinker_train.loaded(art) as svc:
        return _check(art, svc)


def _check(art: Any, svc: Any) -> dict[str, Any]:
    pack = art.load("preprocessing/pack.py")
    shared = int(pack.DEFAULT_MIN_PREFIX_TREE_SHARED_SEGMENT_LENGTH)
    # The details measure as the claims do and count with the masks judge's own function: the
    # audit's two-branch group (a prompt 16 tokens past the packer's minimum), packed as the
    # masks are written for (pack_results=True) and as ART's Tinker path packs it.
    case = _tinker_oracle.mask_case(16, [3, 3])
    prompt_len = shared + case["extra"]
    packed = _tinker_property.measure_masks(svc, shared)(case)
    wrong, trainable = _tinker_oracle.wrong_context(case, packed)
    tinker_packs, why = tinker_pack_results(svc)
    path = _tinker_property.measure_masks(svc, shared, pack_results=bool(tinker_packs))(case)
    path_wrong, path_trainable = _tinker_oracle.wrong_context(case, path)
    reach = (
        f"ART's Tinker path packs with pack_results={tinker_packs} ({why}): "
        f"{len(path['rows'])} rows of {[len(r['datums']) for r in path['rows']]} datums, "
        f"{path_wrong} of {path_trainable} trainable tokens in the wrong context"
    )
    masks_detail = (
        f"two-branch group, {prompt_len}-token prompt, packed with pack_results=True: "
        f"{len(packed['rows'])} row, {wrong} of {trainable} trainable tokens scored in the "
        f"wrong context by the masks of {svc.where} (run); {reach} (artbot's addition)"
    )
    service = art.source("tinker/service.py")
    line = next(iter(_source_lines(service, "def resolve_global_grad_accumulation_sequences(")))
    types = art.load("types.py")
    accumulation = svc.run(
        svc.service.resolve_global_grad_accumulation_sequences(types.TrainConfig())
    )
    two = _tinker_property.measure_steps(svc)(_tinker_oracle.step_case(2))
    steps, rows = two["optim_steps"], two["packed_rows"]
    step_detail = (
        f"{steps} optim_step calls for {rows} packed rows in one train call (run); ART's "
        f"contract: resolve_global_grad_accumulation_sequences returns {accumulation} "
        f"({art.name}/tinker/service.py:{line}, run)"
    )
    train_at = _evidence.block(art, "tinker/service.py", int(svc.where.rsplit(":", 1)[1]))
    mask_fix = [
        _evidence.lines(
            art,
            "tinker/service.py",
            "row = parse_prefix_tree_row(",
            "for segment in row.segments",
            look_for="group_ids.new_tensor((segment.group_id, *segment.ancestors)),",
        )
    ]
    reach_at = [  # where ART's Tinker path chooses pack_results (artbot's addition)
        _evidence.lines(art, "local/backend.py", "self._supports_result_packing = False"),
        _evidence.lines(art, "local/backend.py", "pack_results=self._supports_result_packing,"),
    ]
    step_at = [
        train_at,
        _evidence.lines(
            art,
            "tinker/service.py",
            "optim_step_future = await state.training_client.optim_step_async(",
        ),
        _evidence.lines(
            art, "tinker/service.py", "async def resolve_global_grad_accumulation_sequences("
        ),
    ]

    found = {
        cid: _tinker_property.search(svc, cid, shared, channel=art)
        for cid in _tinker_property.COVERS
    }
    masks_found, steps_found = (
        found["wrong-per-datum-masks"],
        found["one-optimizer-step-per-packed-row"],
    )
    masks_detail = f"{masks_found.summary()}; {masks_detail}"
    step_detail = f"{steps_found.summary()}; {step_detail}"
    return {
        "claims": {
            "wrong-per-datum-masks": _evidence.claim(
                not masks_found.holds,
                masks_detail,
                method="ran",
                at=[train_at, *reach_at],
                fix=mask_fix,
                domain=masks_found.domain(),
            ),
            "one-optimizer-step-per-packed-row": _evidence.claim(
                not steps_found.holds,
                step_detail,
                method="ran",
                at=step_at,
                domain=steps_found.domain(),
            ),
        },
        "detail": f"{masks_detail}; {step_detail}",
        "ran": [
            f"{art.name}/preprocessing/pack.py:packed_tensors_from_tokenized_results",
            f"{svc.where} TinkerService.train (service.py imported whole, entered "
            "as LocalBackend calls it; stand-in Tinker client)",
            f"{art.name}/tinker/service.py:TinkerService.resolve_global_grad_accumulation_sequences",
            f"{art.name}/tinker/backend.py:TinkerBackend (built as ART builds it) -> "
            "local/backend.py:LocalBackend._prepare_training_batch: pack_results (run)",
        ],
        "scope": "ART's packer and TinkerService (tinker/service.py imported whole) run; "
        "stand-ins at the boundary only: " + "; ".join(svc.said) + ". The Tinker client "
        "records the datums and counts the optimizer steps ART takes",
        "method": "ran",
    }


STAND_IN_KEY = "artbot-stand-in-key"  # TinkerBackend's tinker_api_key: no Tinker is reached


def tinker_pack_results(svc: Any) -> tuple[bool | None, str]:
    """``pack_results`` on ART's Tinker path, run: a ``TinkerBackend`` built as ART builds it
    (``tinker/backend.py`` imported whole) prepares one step of a 0/1 group of two trajectories
    through LocalBackend's ``_prepare_training_batch`` (``_get_packed_tensors``, the packer with
    the backend's own ``pack_results``); its two results in one row: it packs. None: no step."""
    folder = svc.folder / "tinker-backend"
    edge = _grpo_art.boundary(svc.art.load, folder, svc.loop)
    tinker_backend = svc.art.load("tinker/backend.py").TinkerBackend
    saved = os.environ.get("TINKER_API_KEY")
    try:
        backend = edge.backend(tinker_backend, tinker_api_key=STAND_IN_KEY, path=str(folder))
        batch = edge.prepare(backend, [[0.0, 1.0]])
    finally:
        with contextlib.suppress(KeyError):
            del os.environ["TINKER_API_KEY"]
        if saved is not None:
            os.environ["TINKER_API_KEY"] = saved
    where = f"{svc.art.name}/tinker/backend.py:TinkerBackend"
    if batch is None:
        return None, f"{where} prepared no step for a 0/1 group of two trajectories (run)"
    rows = int(batch.num_sequences)
    return rows < 2, (
        f"{where}, built as ART builds it, packed a 0/1 group of two trajectories into "
        f"{rows} row{'s' if rows != 1 else ''} through LocalBackend._prepare_training_batch (run)"
    )


def _source_lines(text: str, needle: str) -> list[int]:
    found = _source.lines_with(text, needle)
    if not found:
        raise LookupError(f"{needle!r} not in tinker/service.py")
    return found
