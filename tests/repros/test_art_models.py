"""The repros' models of ART functions give what ART's own functions give, on the repros' inputs.

Each test loads the function from the cached openpipe-art wheel (0.5.20 is the audited code;
0.5.21 for the fixed forms it ships) with artbot's single-file loader and runs the repro's
``measure`` on it and on the repro's model. The tests skip, saying why, when the wheel is not in
artbot's wheel cache (``$ARTBOT_CACHE_DIR`` or ``~/.cache/artbot/wheels``; ``artbot verify
--release 0.5.20`` fetches it).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from artbot.verify.code import load_repro  # noqa: E402
from artbot.verify.isolation import ArtModules  # noqa: E402
from tests.helpers.wheels import default_wheels  # noqa: E402

pytestmark = [pytest.mark.repro, pytest.mark.network]

REPROS = Path(__file__).resolve().parents[2] / "repros"


def _release(version: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArtModules]:
    tree = default_wheels().tree(version)
    with ArtModules(tree / "art") as art:
        yield art


@pytest.fixture
def art_0520(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArtModules]:
    yield from _release("0.5.20", tmp_path_factory)


@pytest.fixture
def art_0521(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArtModules]:
    yield from _release("0.5.21", tmp_path_factory)


def _repro(stem: str) -> ModuleType:
    return load_repro(next(REPROS.glob(f"{stem}_*.py")))


def _same(a: Any, b: Any, path: str = "") -> None:
    """Equal as plain data: tensors elementwise (NaN equals NaN), floats bit for bit."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        assert torch.equal(torch.as_tensor(a), torch.as_tensor(b)) or torch.allclose(
            torch.as_tensor(a).double(), torch.as_tensor(b).double(), rtol=0, atol=0, equal_nan=True
        ), path
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), path
        for k in a:
            _same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        assert math.isnan(b), path
    else:
        assert a == b, path


def test_item10_model_is_art_0520_compute_advantages(art_0520: ArtModules) -> None:
    repro = _repro("item10")
    real = art_0520.load("tinker_native/data.py").compute_advantages
    _same(repro.measure(real), repro.measure(repro.compute_advantages))
    real_equal = repro.measure_equal_groups(real)
    _same(real_equal, repro.measure_equal_groups(repro.compute_advantages))
    # The docstring's figures: an FP32 mean one ulp off gives every member an advantage.
    by_group = {(g["rewards"][0], len(g["rewards"])): g["advantages"] for g in real_equal}
    assert by_group[(0.22, 3)] == pytest.approx([0.8165] * 3, abs=1e-4)
    assert by_group[(0.15, 8)] == pytest.approx([0.9354] * 8, abs=1e-4)


def test_item10_fixed_model_is_art_0521_compute_advantages(art_0521: ArtModules) -> None:
    repro = _repro("item10")
    real = art_0521.load("tinker_native/data.py").compute_advantages
    _same(repro.measure(real), repro.measure(repro.compute_advantages_fixed))
    real_equal = repro.measure_equal_groups(real)
    _same(real_equal, repro.measure_equal_groups(repro.compute_advantages_fixed))
    assert repro.max_equal_group_advantage(real_equal) == 0.0
    assert not repro.is_reproduced(repro.measure(real))


@pytest.mark.parametrize("stem", ["item07", "item08"])
def test_loss_fn_model_is_art_0520_loss_fn(art_0520: ArtModules, stem: str) -> None:
    repro = _repro(stem)
    _same(repro.measure(art_0520.load("loss.py").loss_fn), repro.measure())


def test_item03_pack_model_is_art_0520_packer(art_0520: ArtModules) -> None:
    repro = _repro("item03")
    pack = art_0520.load("preprocessing/pack.py").packed_tensors_from_tokenized_results
    _same(repro.measure(pack_impl=pack), repro.measure())


def test_item09_packer_model_is_art_0520_prefix_tree_pack(art_0520: ArtModules) -> None:
    repro = _repro("item09")
    pack = art_0520.load("megatron/prefix_tree_packing.py").prefix_tree_pack
    _same(repro.measure(pack_impl=pack), repro.measure())


def test_item09_ancestor_masks_are_art_0521_masks(art_0521: ArtModules) -> None:
    """0.5.21's service.py selects each segment's group and its ancestors from
    ``parse_prefix_tree_row``; the repro's ``ancestor_masks`` models that."""
    repro = _repro("item09")
    parse = art_0521.load("megatron/prefix_tree.py").parse_prefix_tree_row

    def art_masks(group_ids: Any, parent_ids: Any) -> list[tuple[int, Any]]:
        row = parse(group_ids=group_ids, parent_ids=parent_ids)
        return [
            (s.group_id, torch.isin(group_ids, group_ids.new_tensor((s.group_id, *s.ancestors))))
            for s in row.segments
        ]

    rows = [repro.two_branch_row()[0], repro.nested_row()[0]]
    rows += [repro.trigger_row(n)[0] for n in repro.TRIGGER_PROMPT_LENGTHS]
    for row in rows:
        ours = repro.ancestor_masks(row.group_ids, row.parent_ids)
        theirs = art_masks(row.group_ids, row.parent_ids)
        assert [g for g, _ in ours] == [g for g, _ in theirs]
        assert all(torch.equal(a, b) for (_, a), (_, b) in zip(ours, theirs, strict=True))
