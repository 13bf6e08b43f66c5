"""Item 6's check: TrainerRank's optimizer built by ART's own code from ``AdamParams``, on CPU.

``trainer_rank/_impl.py`` needs Python 3.12 and Megatron, so it is not imported whole: ART's
``AdamParams``, its checkpoint slot and ``_DynamicOptimizer``, and TrainerRank's
``_dynamic_optimizer``, ``_new_dynamic_optimizer`` and ``_guard_optim_step_configuration``
(module functions of ``trainer_rank/_optimizer.py`` from 0.5.21, methods of ``_impl.py`` in
0.5.20) are compiled from the release's source (``_art_partial``) and called with a stand-in
``self`` holding one checkpoint slot of BF16 LoRA-shaped parameters. What is read is the eps
the optimizer ART builds *uses*, measured from a real step (issue #50: a fake can floor eps
inside the step while ``param_groups`` say 1e-13): as ``_dynamic_optim_step`` does, each master
gets a gradient and ``dynamic.optimizer.step()`` runs; the gradient is the same on every step
(so Adam's bias-corrected moments are ``g`` and ``g**2``) and of the size of the eps tried, and
the eps the step used is solved from AdamW's update ``lr * g / (|g| + eps)`` after its
decoupled weight decay ``p * (1 - lr * weight_decay)``, with the lr and weight decay that
AdamParams was given.

The cross-rank guard runs against a stand-in ``torch.distributed`` of two ranks: the other
rank's digest is the one the guard itself computed for the other config, so the guard raises
exactly when its digest of the two configs differs.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import random
from types import SimpleNamespace
from typing import Any

import _art_partial
import torch

IMPL, OPTIMIZER = "trainer_rank/_impl.py", "trainer_rank/_optimizer.py"
NAMES = ("_dynamic_optimizer", "_new_dynamic_optimizer", "_guard_optim_step_configuration")
LR = 1e-4
TRIED_EPS = (1e-13, 1e-6)
OTHER_SETTINGS = 3  # draws of the other fields at non-default values
# One try of a field: (eps set, the other fields set, each param group's eps or None: refused)
Tried = tuple[float, dict[str, Any], list[float] | None]


class TwoRanks:
    """``torch.distributed`` for two ranks: ``all_gather`` gives this rank's tensor and
    ``other`` (this rank's again when ``other`` is None); ``seen`` keeps each local tensor."""

    def __init__(self) -> None:
        self.other: torch.Tensor | None = None
        self.seen: list[torch.Tensor] = []

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return True

    def get_world_size(self, *_: Any) -> int:
        return 2

    def all_gather(self, gathered: list[torch.Tensor], local: torch.Tensor, **_: Any) -> None:
        self.seen.append(local.clone())
        gathered[0].copy_(local)
        gathered[1].copy_(local if self.other is None else self.other)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(torch.distributed, name)


class _ModuleView:
    """``_impl`` as ``_optimizer.py`` uses it: each attribute compiled on first use."""

    def __init__(self, module: _art_partial.PartialModule) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if not (self._module.has(name) or self._module._known(name)):
            raise AttributeError(f"{self._module.path} has no {name}")
        return self._module.get(name)


class ArtOptimizer:
    """ART's optimizer-building functions for one tree, and a way to call them."""

    def __init__(self, art: Any) -> None:
        self.dist = TwoRanks()
        self.impl = _art_partial.PartialModule(art, IMPL, {"dist": self.dist})
        self.functions: dict[str, Any] = {}
        self.where: dict[str, str] = {}
        split = bool(art.source(OPTIMIZER))
        if split:
            optimizer = _art_partial.PartialModule(
                art, OPTIMIZER, {"_impl": _ModuleView(self.impl)}
            )
        for name in NAMES:
            if split and optimizer.has(name):
                self.functions[name] = optimizer.get(name)
                self.where[name] = f"{optimizer.path}:{optimizer.line_of(name)}"
            else:
                self.functions[name], line = self.impl.method("TrainerRank", name)
                self.where[name] = f"{self.impl.path}:{line}"
        self.AdamParams = self.impl.get("AdamParams")
        self.params_at = f"{self.impl.path}:{self.impl.line_of('AdamParams')}"

    def rank(self) -> Any:
        """A stand-in TrainerRank with one slot ("default") of BF16 LoRA-shaped parameters
        (LoRA's B starts at 0; A is 0 here too, so that a first step has no weight decay)."""
        params = tuple(
            torch.nn.Parameter(torch.zeros(shape, dtype=torch.bfloat16))
            for shape in ((64, 8), (8, 64))
        )
        if self.impl.has("_CheckpointSlot"):
            slot = self.impl.get("_CheckpointSlot")(params=params)
        else:
            slot = SimpleNamespace(params=params, optimizer=None, custom={})
        rank = SimpleNamespace(_checkpoint_slots={"default": slot}, device=torch.device("cpu"))
        for name, function in self.functions.items():
            setattr(rank, name, functools.partial(function, rank))
        return rank

    def eps_of(
        self, params: Any, rank: Any | None = None, scale: float | None = None
    ) -> list[float]:
        """The eps each master parameter's step used, in the optimizer ART builds (or updates)
        from ``params`` through ``_dynamic_optimizer``: one real step (see the module's
        docstring), with gradients of size ``scale`` (by default, the eps a first step at
        1e-8 implies), each solved value to 2 significant digits."""
        if scale is None:  # a first step at 1e-8, then one at the size it found, afresh
            rough = self.eps_of(params, scale=1e-8)
            scale = max(min(rough), 1e-30) if all(map(math.isfinite, rough)) else 1e-8
        rank = rank if rank is not None else self.rank()
        dynamic = rank._dynamic_optimizer("default", params)
        return step_eps(dynamic, params, scale)

    def params(
        self, eps: float | None = None, field: str = "eps", others: dict[str, Any] | None = None
    ) -> Any:
        """``AdamParams(learning_rate=LR)``, with ``field=eps`` when given (TypeError when ART's
        AdamParams has no such field) and ``others`` (other fields' values) on top. Any other
        field without a default gets 1e-8."""
        extra = {name: 1e-8 for name in self.required() if name not in ("learning_rate", field)}
        extra.update(others or {})
        if eps is not None:
            extra[field] = eps
        return self.AdamParams(**{"learning_rate": LR, **extra})

    def defaults(self) -> dict[str, Any]:
        """Each field's default (1e-8 for one without, LR for the learning rate)."""
        out: dict[str, Any] = {}
        if dataclasses.is_dataclass(self.AdamParams):
            for f in dataclasses.fields(self.AdamParams):
                if f.default is not dataclasses.MISSING:
                    out[f.name] = f.default
                elif f.default_factory is not dataclasses.MISSING:
                    out[f.name] = f.default_factory()
        else:
            for name, f in (getattr(self.AdamParams, "model_fields", None) or {}).items():
                if not f.is_required():
                    out[name] = f.get_default()
        out.setdefault("learning_rate", LR)
        return {name: out.get(name, 1e-8) for name in self.fields()}

    def others(self, field: str) -> list[dict[str, Any]]:
        """The other fields' settings each eps is tried under: all at their defaults, then
        ``OTHER_SETTINGS`` draws (a fixed seed) giving every other float field (the learning
        rate too) a value other than its default, in (0.5, 0.95) x the default (a default of 0
        gets 0.001-0.05): a value a beta, a decay, a clip norm and a learning rate all accept."""
        rng = random.Random(6)
        defaults = self.defaults()
        out: list[dict[str, Any]] = [{}]
        for _ in range(OTHER_SETTINGS):
            draw: dict[str, Any] = {}
            for name, value in defaults.items():
                if name == field or isinstance(value, bool) or not isinstance(value, float):
                    continue
                draw[name] = value * rng.uniform(0.5, 0.95) if value else rng.uniform(1e-3, 0.05)
            out.append(draw)
        return out

    def fields(self) -> dict[str, bool]:
        """AdamParams' fields (a dataclass's, or a pydantic model's): name -> has a default."""
        if dataclasses.is_dataclass(self.AdamParams):
            return {
                f.name: not (
                    f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                )
                for f in dataclasses.fields(self.AdamParams)
            }
        model_fields = getattr(self.AdamParams, "model_fields", None) or {}
        return {name: not f.is_required() for name, f in model_fields.items()}

    def required(self) -> list[str]:
        return [name for name, has_default in self.fields().items() if not has_default]

    def eps_field(self) -> tuple[str | None, dict[str, list[Tried]]]:
        """The field of AdamParams, whatever it is called, whose value reaches the optimizer's
        ``param_groups[i]["eps"]``: each field but the learning rate set in turn to each of
        ``TRIED_EPS``, under each of ``others(field)`` (the other fields at their defaults, then
        at other values), a field's tries stopping at its first miss (a value it refuses counts
        as a miss). Returns the first field that reaches it in every case, and each field's
        tries: ``(eps set, other fields, the optimizer's eps or None when refused)``."""
        tried: dict[str, list[Tried]] = {}
        for name in self.fields():
            if name == "learning_rate":
                continue
            got: list[Tried] = []
            for others in self.others(name):
                for eps in TRIED_EPS:
                    try:
                        got.append(
                            (eps, others, self.eps_of(self.params(eps, name, others), scale=eps))
                        )
                    except (TypeError, ValueError):
                        got.append((eps, others, None))
                    if not _reached(got[-1]):
                        break
                if not _reached(got[-1]):
                    break
            tried[name] = got
            if all(_reached(t) for t in got):
                return name, tried
        return None, tried

    def guard_tells_apart(self, first: Any, second: Any) -> bool:
        """Does the cross-rank guard raise when two ranks hold ``first`` and ``second``?"""
        guard = self.rank()._guard_optim_step_configuration
        self.dist.other = None
        guard(None, second, "allow")
        self.dist.other = self.dist.seen[-1]
        try:
            guard(None, first, "allow")
        except Exception as exc:  # ART's TrainerRankSlotStateError
            return "differ across ranks" in str(exc)
        finally:
            self.dist.other = None
        return False


def measure(art: Any) -> dict[str, Any]:
    """What ART's optimizer takes for eps: by default, for each of ``TRIED_EPS`` set in
    AdamParams, on a later step with another eps, and whether the guard compares it."""
    built = ArtOptimizer(art)
    out: dict[str, Any] = {"where": built.where, "params_at": built.params_at}
    try:
        out["default"] = built.eps_of(built.params())
    except TypeError as exc:  # a required field: AdamParams(learning_rate=...) is refused
        out["default"] = []
        out["no_default"] = str(exc)
    field, by_field = built.eps_field()
    out["fields"] = sorted(built.fields())
    out["by_field"] = by_field
    if field is None:
        out["no_field"] = (
            f"no field of AdamParams ({', '.join(out['fields'])}) reaches the step's eps "
            f"in every case tried"
        )
        out["closest"] = closest(by_field)
        return out
    out["field"] = field
    tried = {eps: built.params(eps, field) for eps in TRIED_EPS}
    out["set"] = {eps: v for eps, others, v in by_field[field] if not others}
    out["settings"] = len({repr(o) for _, o, _ in by_field[field]})
    rank = built.rank()
    built.eps_of(tried[TRIED_EPS[0]], rank, scale=TRIED_EPS[1])  # the same gradient: exact moments
    out["later"] = built.eps_of(tried[TRIED_EPS[1]], rank, scale=TRIED_EPS[1])
    out["guard"] = built.guard_tells_apart(tried[TRIED_EPS[0]], tried[TRIED_EPS[1]])
    return out


def step_eps(dynamic: Any, params: Any, scale: float) -> list[float]:
    """One step of ART's optimizer ``dynamic`` with every gradient element +-``scale``; the eps
    each master's update implies (2 significant digits; inf where a master did not move)."""
    lr, decay = float(params.learning_rate), float(params.weight_decay)
    before = [m.detach().clone() for m in dynamic.master_params]
    for master in dynamic.master_params:
        signs = torch.ones(master.numel(), dtype=torch.float32)
        signs[::2] = -1.0
        master.grad = (scale * signs).reshape(master.shape)
    dynamic.optimizer.step()
    dynamic.optimizer.zero_grad(set_to_none=True)
    out = []
    for master, p0 in zip(dynamic.master_params, before, strict=True):
        update = (p0.double() * (1 - lr * decay) - master.detach().double()).abs()
        moved = update[update > 0]
        if not moved.numel():
            out.append(float("inf"))
            continue
        eps = (lr * scale / moved - scale).median().item()
        out.append(float(f"{eps:.2g}"))
    return out


def _reached(tried: Tried) -> bool:
    eps, _, got = tried
    return got is not None and bool(got) and got == [eps] * len(got)


def closest(by_field: dict[str, list[Tried]]) -> tuple[str, Tried] | None:
    """The field that came nearest to reaching the optimizer's eps (the most tries that
    reached it; among equals, one named like eps first, else the first) and its first miss."""
    best = sorted(
        by_field, key=lambda n: (-sum(map(_reached, by_field[n])), "eps" not in n.lower())
    )
    if best and not any(map(_reached, by_field[best[0]])) and "eps" not in best[0].lower():
        # No field reaches it in any try and none is named for it: no field is nearest.
        miss = next((t for t in by_field[best[0]] if not _reached(t)), None)
        return None if miss is None else (f"any of {', '.join(by_field)}", miss)
    for name in best:
        miss = next((t for t in by_field[name] if not _reached(t)), None)
        if miss is not None:
            return name, miss
    return None


def target_modules(art: Any, model: str) -> tuple[str, ...]:
    """ART's default LoRA target modules for ``model`` (its registry's function, run)."""
    registry = art.load("megatron/model_support/registry.py")
    return tuple(registry.default_target_modules_for_model(model))
