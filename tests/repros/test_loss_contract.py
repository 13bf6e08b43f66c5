"""Items 7, 8 and 801: the check and the regression test hold one contract (issue #51). The
regression test stands alone in ART's suite, so it cannot import the check's domain; this test
reads its ``DIMS`` and compares them with the check's (``_loss_path`` and ``_ppo_property``'s
``CONTRACTS``): the same dimensions and values, the same path, oracle and tolerance."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import torch

from artbot.repro.scripts import import_script

REPO = Path(__file__).resolve().parents[2]
REPROS = REPO / "repros"
REGRESSION = {
    "7": "test_item07_tis_without_original_logprobs.py",
    "8": "test_item08_minus_inf_old_logprob.py",
    "801": "test_item801_ppo_sentinel_old_logprob.py",
}
# The regression test's name for a dimension, where it reads better than the check's.
RENAMED = {"801": {"sentinel": "bad old"}}


@pytest.fixture(scope="module")
def prop() -> Any:
    import sys

    sys.path.insert(0, str(REPROS))
    try:
        return import_script(REPROS / "_ppo_property.py", "repros_ppo_property_under_test")
    finally:
        sys.path.remove(str(REPROS))


def regression_dims(item: str) -> tuple[dict[str, tuple[Any, ...]], str]:
    """The regression test's ``DIMS`` (evaluated with torch only) and its text."""
    text = (REPROS / "regression" / REGRESSION[item]).read_text(encoding="utf-8")
    node = next(
        n
        for n in ast.parse(text).body
        if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "DIMS"
    )
    dims = eval(compile(ast.Expression(node.value), "DIMS", "eval"), {"torch": torch})
    names = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}
    out = {}
    for key, values in dims.items():
        values = tuple(names.get(v, v) if isinstance(v, torch.dtype) else v for v in values)
        out[RENAMED.get(item, {}).get(key, key)] = values
    return out, text


@pytest.mark.parametrize("item", sorted(REGRESSION))
def test_the_check_and_the_regression_test_cover_one_domain(prop: Any, item: str) -> None:
    contract = prop.CONTRACTS[item]
    path = prop.path_
    check = {**path.CONFIG_VALUES, **path.PATH_VALUES, **contract["fixed"], **contract["extra"]}
    fixed = {k: v[0] for k, v in check.items() if len(v) == 1}
    varied = {k: v for k, v in check.items() if len(v) > 1}
    dims, text = regression_dims(item)
    assert dims == varied
    for key, value in fixed.items():  # a value the claim fixes is in the test's config
        assert f'"{key}": {value!r}' in text, key
    # the same path: ART's packer, create_train_inputs, LossInputs, loss_fn with a reduction
    for name in ("packed_tensors_from_tokenized_results", "create_train_inputs", "LossInputs"):
        assert name in text, name
    assert 'REDUCTION[case["caller"]]' in text and "VOCAB = 16" in text and path.VOCAB == 16


def test_the_oracles_and_tolerances_are_the_checks(prop: Any) -> None:
    _, seven = regression_dims("7")
    assert "4 * eps * max(abs(a), abs(b), 1e-30)" in seven  # tis_step: 4 ulps, relative
    _, sentinel = regression_dims("801")
    assert prop.SANE_FACTOR == 2.0 and "bound = 2 * edge * scale + 8 * eps * abs(want)" in sentinel
    for item in REGRESSION:
        assert prop.CLEAR_ERROR.pattern in regression_dims(item)[1]
