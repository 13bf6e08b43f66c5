"""Item 6's check: TrainerRank's optimizer step, run as ART runs it, on CPU (issue #50).

``trainer_rank/_impl.py`` is imported whole (``_art_whole``: Megatron, Transformer Engine and
the GPU kernels stood in for; on Python 3.11 its ``type X = ...`` statements run as
assignments), and every step enters at ``TrainerRank.optim_step``, the method ART's callers
use (0.5.20: a method of ``_impl.py``; 0.5.21+: ``trainer_rank/_optimizer.py``'s function bound
on ``TrainerRank``). From there down everything is ART's own: the cross-rank guard, the slot
selection, ``_dynamic_optim_step`` (the gradients' reduction, the global norm and clip,
``_dynamic_optimizer`` / ``_new_dynamic_optimizer``, ``optimizer.step()``, the copy of the FP32
masters back into the slot's parameters). The ``TrainerRank`` is uninitialised (its
``__init__`` loads a Megatron model) and holds only:

- one checkpoint slot ``"default"`` (ART's ``_CheckpointSlot``) of FP32 parameters, so that the
  update ART copies back from its FP32 masters is read exactly (the dtype does not reach eps);
- a stand-in runtime: a model of no chunks, and ``zero_internal_padding_grads`` a no-op (ART's
  hook for Megatron's padded layers, which this model has none of);
- no forward wave in flight, and the CPU as its device.

The eps a step used is solved from what the step did to the parameters: from 0, with every
gradient element +-g and no earlier step, AdamW moves each element by ``lr * g / (|g| + eps)``
(the moments' bias corrections cancel; weight decay of 0 is 0), so ``eps = lr * g / |step| - g``.
The global norm of these gradients stays far below every clip norm tried, so ART's clip leaves
them as given. Nothing is read from ``param_groups``: a fix or a fake anywhere on the path (the
caller, a helper, the step itself) is measured as it acts (issue #50: an eps floored inside the
step while ``param_groups`` say 1e-13).

The cross-rank guard runs on a stand-in ``torch.distributed`` of the case's ranks (:class:`Ranks`,
two at least): every other rank's digest is the one the guard itself computed in a step with the
other config, so the guard raises exactly when its digest of the two configs differs.

The probes' slot holds as many parameter tensors as the case says (issue #53, the review's
fakes gated past the old domain's 2: a Qwen3-4B LoRA has 504, ART's
``default_target_modules_for_model``), the LoRA pair first, and steps under as many ranks as
the case says (1: no ``torch.distributed``; up to 8, a node's GPUs, all holding the same
tensors), so an eps gated on the tensor count or the world size is measured as ART steps.
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

IMPL = "trainer_rank/_impl.py"
ENTRY = "optim_step"
# The path a step takes, outermost first (each found on TrainerRank, wherever ART defines it).
PATH = (
    "optim_step",
    "_guard_optim_step_configuration",
    "_dynamic_optim_step",
    "_dynamic_optimizer",
    "_new_dynamic_optimizer",
)
SHAPES = ((64, 8), (8, 64))  # a rank-8 LoRA pair of a 64-wide layer, for the eps probes
OTHER_SHAPE = (4, 4)  # every further parameter tensor of a case's slot (its count is the point)
LR = 5e-6  # ART's default learning rate (art/types.py TrainConfig), when a case gives none
# AdamParams' fields at the audit (trainer_rank/_impl.py), which a case may set by name.
NAMED = ("learning_rate", "beta1", "beta2", "weight_decay", "grad_clip_norm")
REQUIRED_FILL = 1e-8  # a field without a default that a case does not name (each caller sets it)


class Ranks:
    """``torch.distributed`` for ``world`` ranks holding the same tensors: ``all_gather`` gives
    this rank's tensor and, for every other rank, ``other`` (this rank's again when ``other`` is
    None) and keeps each local tensor in ``seen``; ``all_reduce`` sums ``world`` equal tensors
    (a MAX or MIN leaves them)."""

    def __init__(self, world: int = 2) -> None:
        self.world = world
        self.other: torch.Tensor | None = None
        self.seen: list[torch.Tensor] = []

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return True

    def get_world_size(self, *_: Any) -> int:
        return self.world

    def get_rank(self, *_: Any) -> int:
        return 0

    def all_gather(self, gathered: list[torch.Tensor], local: torch.Tensor, **_: Any) -> None:
        self.seen.append(local.clone())
        gathered[0].copy_(local)
        for rest in gathered[1:]:
            rest.copy_(local if self.other is None else self.other)

    def all_reduce(self, tensor: torch.Tensor, op: Any = None, **_: Any) -> None:
        if op is None or op == torch.distributed.ReduceOp.SUM:
            tensor.mul_(self.world)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(torch.distributed, name)


class TrainerRankOnCpu:
    """ART's ``TrainerRank`` of one tree (imported whole), and steps through its ``optim_step``."""

    def __init__(self, art: Any, whole: Any) -> None:
        self.impl = whole.load(IMPL)
        self.cls = self.impl.TrainerRank
        self.AdamParams = self.impl.AdamParams
        root = Path(art.package_dir).parent
        self.where = {name: _where(getattr(self.cls, name), root) for name in PATH}
        self.params_at = _where(self.AdamParams, root)
        self.shapes: tuple[tuple[int, ...], ...] = SHAPES  # the probes' slot
        self.world = 1  # the probes' ranks (1: no torch.distributed)

    def layout(self, case: dict[str, Any]) -> None:
        """The probes' slot and ranks as ``case`` gives them (``tensors``, ``world_size``;
        absent: the LoRA pair on one rank)."""
        count = max(len(SHAPES), int(case.get("tensors") or len(SHAPES)))
        self.shapes = SHAPES + (OTHER_SHAPE,) * (count - len(SHAPES))
        self.world = max(1, int(case.get("world_size") or 1))

    def zeros(self) -> Any:
        """A rank whose slot holds the probes' tensors, all zero."""
        return self.rank(tuple(torch.zeros(s) for s in self.shapes))

    # a rank and a step ----------------------------------------------------------------
    def rank(self, tensors: tuple[torch.Tensor, ...]) -> Any:
        """An uninitialised TrainerRank with one slot of FP32 parameters holding ``tensors``."""
        rank = self.cls.__new__(self.cls)
        params = tuple(torch.nn.Parameter(t.detach().float().clone()) for t in tensors)
        rank._checkpoint_slots = {"default": self.impl._CheckpointSlot(params=params)}
        rank._skipped_forward_waves = {}
        rank.device = torch.device("cpu")
        rank.runtime = SimpleNamespace(
            model=[],
            model_support_handler=SimpleNamespace(zero_internal_padding_grads=lambda model: None),
        )
        return rank

    @staticmethod
    def slot(rank: Any) -> tuple[torch.nn.Parameter, ...]:
        return tuple(rank._checkpoint_slots["default"].params)

    def step(self, rank: Any, adam: Any, grads: tuple[torch.Tensor, ...]) -> dict[str, float]:
        """Give the slot's parameters ``grads`` and run ``rank.optim_step(params=adam)``."""
        for param, grad in zip(self.slot(rank), grads, strict=True):
            param.grad = grad.detach().float().clone()
        if self.world == 1 or isinstance(self.impl.dist, Ranks):
            return dict(rank.optim_step(params=adam))
        saved, self.impl.dist = self.impl.dist, Ranks(self.world)
        try:
            return dict(rank.optim_step(params=adam))
        finally:
            self.impl.dist = saved

    # AdamParams --------------------------------------------------------------------------
    def fields(self) -> dict[str, Any]:
        """AdamParams' fields (a dataclass's, or a pydantic model's): name -> default
        (``dataclasses.MISSING`` for a field without one)."""
        if dataclasses.is_dataclass(self.AdamParams):
            out: dict[str, Any] = {}
            for f in dataclasses.fields(self.AdamParams):
                if f.default is not dataclasses.MISSING:
                    out[f.name] = f.default
                elif f.default_factory is not dataclasses.MISSING:
                    out[f.name] = f.default_factory()
                else:
                    out[f.name] = dataclasses.MISSING
            return out
        model_fields = getattr(self.AdamParams, "model_fields", None) or {}
        return {
            name: dataclasses.MISSING if f.is_required() else f.get_default()
            for name, f in model_fields.items()
        }

    def adam(self, case: dict[str, Any], field: str | None = None, value: Any = None) -> Any:
        """``AdamParams`` for ``case``: ``field`` set to ``value``; each of :data:`NAMED` the
        case gives (not None) set to it; any other float field with a default times the case's
        ``rest`` (when given); the learning rate :data:`LR` unless given; a field without a
        default :data:`REQUIRED_FILL`. TypeError or ValueError when ART refuses it."""
        kwargs: dict[str, Any] = {}
        for name, default in self.fields().items():
            given = case.get(name) if name in NAMED else None
            if name == field:
                kwargs[name] = value
            elif given is not None:
                kwargs[name] = given
            elif name == "learning_rate":
                kwargs[name] = LR
            elif default is dataclasses.MISSING:
                kwargs[name] = REQUIRED_FILL
            elif case.get("rest") is not None and _is_float(default) and name not in NAMED:
                kwargs[name] = default * case["rest"] if default else case["rest"] * 0.01
        return self.AdamParams(**kwargs)

    # what a step did --------------------------------------------------------------------
    def step_eps(self, adam: Any, scale: float) -> list[float]:
        """The eps each parameter's first step used, with every gradient element +-``scale``
        (inf where a parameter did not move)."""
        rank = self.zeros()
        self.step(rank, adam, _signed(scale, self.shapes))
        lr = float(adam.learning_rate)
        return _distinct(_solved(p.detach().double().abs(), lr, scale) for p in self.slot(rank))

    def default_eps(self, adam: Any) -> list[float]:
        """The eps a first step uses: one step at 1e-8, then one at the size it found."""
        rough = self.step_eps(adam, 1e-8)
        scale = min(rough) if all(map(math.isfinite, rough)) and min(rough) > 0 else 1e-8
        return self.step_eps(adam, scale)

    def later_eps(self, first: Any, second: Any, scale: float) -> list[float]:
        """A step with ``first``, then one with ``second`` (the same gradient, +-``scale``, so
        Adam's bias-corrected moments are g and g**2): the eps the second step used."""
        rank = self.zeros()
        self.step(rank, first, _signed(scale, self.shapes))
        before = [p.detach().double().clone() for p in self.slot(rank)]
        self.step(rank, second, _signed(scale, self.shapes))
        lr, decay = float(second.learning_rate), float(second.weight_decay)
        return _distinct(
            _solved((p0 * (1 - lr * decay) - p.detach().double()).abs(), lr, scale)
            for p, p0 in zip(self.slot(rank), before, strict=True)
        )

    def guard_tells_apart(self, first: Any, second: Any, scale: float) -> bool:
        """Does ``optim_step`` refuse when rank 0 holds ``first`` and the other ranks (the
        case's, two at least) ``second``? (The guard's own digest of ``second``, from a step on
        another rank, is what rank 0 gathers.)"""
        two, saved = Ranks(max(2, self.world)), self.impl.dist
        self.impl.dist = two
        try:
            self.step(self.zeros(), second, _signed(scale, self.shapes))
            if not two.seen:  # nothing gathered: no guard compared anything
                return False
            two.other, two.seen = two.seen[0], []
            try:
                self.step(self.zeros(), first, _signed(scale, self.shapes))
            except Exception as exc:  # ART's TrainerRankSlotStateError
                return "differ across ranks" in str(exc)
            return False
        finally:
            self.impl.dist = saved


def probe(built: TrainerRankOnCpu, case: dict[str, Any]) -> dict[str, Any]:
    """The configurability claim's measure: for each field of AdamParams but the learning rate,
    set to the case's ``eps`` (the other fields as the case gives them): the eps a first step
    of the LoRA pair on one rank used, and with it set to ``eps_other`` instead (None: ART
    refused a value), the eps a later step used after the field changed from ``eps`` to
    ``eps_other``, and whether the guard refuses ranks (the case's, two at least) holding the
    two. Where the case's slot or ranks are not the LoRA pair's on one rank, also the eps a
    first step of that slot on those ranks used (``layout``, ``layout_other``), for each field
    whose first step used about the case's eps (those steps are the costly ones).
    And the eps a step uses with the field left out (None: AdamParams needs it)."""
    eps, other = float(case["eps"]), float(case["eps_other"])
    fields: dict[str, Any] = {}
    guard_world = max(2, int(case.get("world_size") or 1))
    for name in built.fields():
        if name == "learning_rate":
            continue
        try:
            first, second = built.adam(case, name, eps), built.adam(case, name, other)
            built.world = guard_world
            guard = built.guard_tells_apart(first, second, eps)
            built.world = 1
            fields[name] = {
                "first": built.step_eps(first, eps),
                "first_other": built.step_eps(second, other),
                "later": built.later_eps(first, second, other),
                "guard": guard,
            }
        except (TypeError, ValueError):  # a value this field refuses
            fields[name] = None
        finally:
            built.world = 1
    built.layout(case)
    try:
        if (built.shapes, built.world) != (SHAPES, 1):
            for name, got in fields.items():
                if got and got["first"] and all(eps / 2 <= e <= 2 * eps for e in got["first"]):
                    got["layout"] = built.step_eps(built.adam(case, name, eps), eps)
                    got["layout_other"] = built.step_eps(built.adam(case, name, other), other)
    finally:
        built.layout({})
    try:
        default: list[float] | None = built.step_eps(built.adam(case), 1e-8)  # for the detail
    except (TypeError, ValueError):
        default = None
    return {"fields": fields, "default": default}


def smallest_eps(built: TrainerRankOnCpu, eps: float) -> tuple[float, str, Any] | None:
    """The smallest eps a step of ART's optimizer can be given, trying AdamParams' defaults and
    each field set to ``eps`` (the other fields at their defaults): (the eps every parameter's
    step used, how it is had, the AdamParams); None when none of them steps."""
    ways: list[tuple[float, str, Any]] = []
    try:
        adam = built.adam({})
        ways.append((max(built.default_eps(adam)), "AdamParams' defaults", adam))
    except (TypeError, ValueError):
        pass
    for name in built.fields():
        if name == "learning_rate":
            continue
        try:
            adam = built.adam({}, name, eps)
            used = built.step_eps(adam, eps)
        except (TypeError, ValueError):
            continue
        if all(math.isclose(e, eps, rel_tol=0.01) for e in used):
            ways.append((max(used), f"AdamParams.{name}={eps:g}", adam))
    return min(ways, key=lambda way: way[0]) if ways else None


def target_modules(art: Any, model: str) -> tuple[str, ...]:
    """ART's default LoRA target modules for ``model`` (its registry's function, run)."""
    registry = art.load("megatron/model_support/registry.py")
    return tuple(registry.default_target_modules_for_model(model))


def _signed(scale: float, shapes: tuple[tuple[int, ...], ...] = SHAPES) -> tuple[torch.Tensor, ...]:
    out = []
    for shape in shapes:
        signs = torch.ones(math.prod(shape))
        signs[::2] = -1.0
        out.append((scale * signs).reshape(shape))
    return tuple(out)


def _solved(moved: torch.Tensor, lr: float, scale: float) -> float:
    """eps from |step| = lr * g / (|g| + eps): the median over the elements that moved."""
    moved = moved[moved > 0]
    if not moved.numel():
        return math.inf
    return float((lr * scale / moved - scale).median())


def _distinct(values: Any) -> list[float]:
    """The distinct eps of a slot's parameters, to 4 digits (a few floats however many tensors
    the slot holds: issue #53's raw is small)."""
    return sorted({float(f"{v:.4g}") for v in values})


def _is_float(value: Any) -> bool:
    return isinstance(value, float) and not isinstance(value, bool)


def _where(obj: Any, root: Path) -> str:
    """``art/<file>:<line>`` of a function or class as ART's module defines it (a class's
    ``class`` line found in its file's text: ``inspect`` would parse the file, and Python 3.11
    cannot parse ``_impl.py``)."""
    target = getattr(obj, "__func__", obj)
    code = getattr(target, "__code__", None)
    if code is not None:
        path, line = Path(code.co_filename), code.co_firstlineno
    else:
        path = Path(sys.modules[target.__module__].__file__ or "")
        text = path.read_text(encoding="utf-8").splitlines()
        head = re.compile(rf"class {target.__name__}\b")
        line = next((n for n, t in enumerate(text, 1) if head.match(t)), 0)
    try:
        shown = path.relative_to(root).as_posix()
    except ValueError:
        shown = path.as_posix()
    return f"{shown}:{line}"
