"""repros/_art_whole.py: ART's modules imported whole, GPU packages stood in for at the import
boundary (issue #50), and repros/_simpler.py's covering array of a check's domain."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

from artbot.repro.scripts import import_script
from artbot.verify.isolation import ArtModules

REPROS = Path(__file__).resolve().parents[2] / "repros"

# A module written as ART's are: a Python 3.12 type statement, Megatron's parallel_state and a
# TE class imported at the top, a class-level registration at import, a same-file helper and a
# module-level table used by the function a check would call.
MODULE = """\
from megatron.core import parallel_state as ps
from megatron.core.extensions.transformer_engine import TERowParallelLinear
from megatron.bridge.models.conversion.param_mapping import AutoMapping

type Scale = float
AutoMapping.register_module_type("Wrapper", "replicated")
_TABLE = {"double": 2.0}


class Wrapper(TERowParallelLinear):
    pass


def _helper(x):
    return x * _TABLE["double"]


def entry(x):
    return _helper(x) * ps.get_tensor_model_parallel_world_size() + ps.get_data_parallel_rank()
"""


def _art(tmp_path: Path) -> ArtModules:
    package = tmp_path / "art"
    (package / "megatron").mkdir(parents=True)
    (package / "megatron" / "thing.py").write_text(MODULE, encoding="utf-8")
    return ArtModules(package)


def _load(name: str) -> object:
    """A helper of repros/, which imports its sibling helpers as top-level modules."""
    sys.path.insert(0, str(REPROS))
    try:
        return import_script(REPROS / f"{name}.py", f"repros{name}_under_test")
    finally:
        sys.path.remove(str(REPROS))


def test_a_module_runs_whole_with_its_helpers_and_one_process_megatron(tmp_path: Path) -> None:
    whole_mod: Any = _load("_art_whole")
    art = _art(tmp_path)
    with art, whole_mod.whole(art) as whole:
        module = whole.load("megatron/thing.py")
        assert module.entry(3.0) == 6.0  # the helper and the table resolve; world size 1, rank 0
        assert issubclass(module.Wrapper, module.TERowParallelLinear)
        said = whole.said()
    assert any("parallel_state (one process)" in s for s in said)
    assert any("type statements run as assignments" in s for s in said) == (
        sys.version_info < (3, 12)
    )
    assert not [k for k in sys.modules if k.split(".")[0] in ("megatron", "art")]


def test_the_covering_array_holds_every_pair_and_starts_at_the_maxima() -> None:
    simpler: Any = _load("_simpler")
    factors = {"dtype": ("float16", "bfloat16"), "calls": (2, 16, 64, 256), "tokens": (8, 64)}
    cases = simpler.pairwise(factors)
    assert cases[0] == {"dtype": "bfloat16", "calls": 256, "tokens": 64}
    for (a, va), (b, vb) in itertools.combinations(factors.items(), 2):
        for x, y in itertools.product(va, vb):
            assert any(c[a] == x and c[b] == y for c in cases), (a, x, b, y)
    assert len(cases) < len(list(itertools.product(*factors.values())))
