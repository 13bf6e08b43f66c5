"""The *read* checks of items 4, 5 and 11 (``check_art``) on the release sources, both ways.

Each check reads one release's text and must come out either way: on the release as shipped
it finds the anchored code (reproduced, with ``file:line`` in that release); on a copy with
the audit's fix applied it says fixed; on a copy with a change that is *not* a fix (an upcast
after the BF16 store, an FP32 sum cast back to BF16) it still says reproduced; on a copy
without the code it says not checked. The record's schema (``ClaimResult``) takes what it
returns through ``artbot.verify.code.claim_results``.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from artbot.catalog import load_catalog
from artbot.scripts import import_script
from artbot.status import ClaimVerdict, Method
from artbot.verify.code import claim_results
from artbot.verify.isolation import ArtModules
from tests.wheels import ArtWheels

ROOT = Path(__file__).resolve().parents[1]
REPROS = ROOT / "repros"
SCRIPTS = {4: "item04_bf16_lm_head", 5: "item05_bf16_grad_accum", 11: "item11_bf16_lora_add"}
FILES = {4: ["trainer_rank/_impl.py"], 5: ["megatron/lora.py", "trainer_rank/_impl.py"]}
FILES[11] = ["megatron/lora.py"]

Change = tuple[str, "str | re.Pattern[str]", str]

# Where each check must find its code in 0.5.23 (read by hand in the wheel).
AT_0_5_23 = {
    4: [(4857, 4880), (4869, 4873)],
    5: [(640, 641), (3309, 3316)],
    11: [(1182, 1183), (1606, None)],
}

# (file, text as released, the audit's fix applied): each must turn the verdict to fixed.
FIXES: dict[int, Change] = {
    4: (
        "trainer_rank/_impl.py",
        "                hidden.unsqueeze(1),\n                weight=output_weight,",
        "                hidden.float().unsqueeze(1),\n"
        "                weight=None if output_weight is None else output_weight.float(),",
    ),
    5: (
        "megatron/lora.py",
        "torch.zeros(a_shape, dtype=dtype, device=device)",
        "torch.zeros(a_shape, dtype=torch.float32, device=device)",
    ),
    # Every wrapper's add, in FP32 and kept there.
    11: (
        "megatron/lora.py",
        re.compile(r"return (\w+) \+ (\w+), (\w+)"),
        r"return \1.float() + \2.float(), \3",
    ),
}
# Changes that look like fixes and are not: the verdict must stay reproduced.
NOT_FIXES: dict[int, Change] = {
    4: (
        "trainer_rank/_impl.py",
        "        return _batch_seq_logits(\n            model._scale_logits(logits),",
        "        logits = logits.float()\n        return _batch_seq_logits(\n"
        "            model._scale_logits(logits),",
    ),
    11: (
        "megatron/lora.py",
        "return base_output + lora_output, bias_output",
        "return (base_output.float() + lora_output.float()).to(base_output.dtype), bias_output",
    ),
    # One wrapper of seven fixed: the others still add in BF16.
    12: (
        "megatron/lora.py",
        "return base_output + lora_output, bias_output",
        "return base_output.float() + lora_output.float(), bias_output",
    ),
}
# Removing the anchored code: the verdict must be not checked.
REMOVED: dict[int, Change] = {
    4: ("trainer_rank/_impl.py", "logits, _ = output_layer(", "logits = output_layer.forward("),
    5: ("trainer_rank/_impl.py", "param.grad.detach().float()", "param.main_grad"),
    11: ("megatron/lora.py", "out = (x @ a_t) @ b_t", "out = lora_kernel(x, a_t, b_t)"),
}


def _repro(item: int) -> ModuleType:
    return import_script(REPROS / f"{SCRIPTS[item]}.py", f"read_{SCRIPTS[item]}")


def _check(item: int, package: Path) -> dict[str, Any]:
    result: dict[str, Any] = _repro(item).check_art(ArtModules(package))
    return result


def _claim(result: dict[str, Any]) -> Any:
    (value,) = result["claims"].values()
    return value


def _copy(art_wheels: ArtWheels, version: str, item: int, tmp_path: Path) -> Path:
    """The files ``item``'s check reads, copied from the release into ``tmp_path/art``."""
    package = art_wheels.package(version)
    for relpath in FILES[item]:
        target = tmp_path / "art" / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(package / relpath, target)
    return tmp_path / "art"


def _patched(package: Path, change: Change) -> Path:
    """``change`` = (file, old, new) applied to the copy: every ``old`` (text or pattern)."""
    relpath, old, new = change
    path = package / relpath
    text = path.read_text(encoding="utf-8")
    if isinstance(old, re.Pattern):
        patched, count = old.subn(new, text)
    else:
        patched, count = text.replace(old, new), text.count(old)
    assert count >= 1, f"{relpath}: {old!r} is not in this release"
    path.write_text(patched, encoding="utf-8")
    return package


@pytest.mark.parametrize("version", ["0.5.20", "0.5.21", "0.5.23"])
@pytest.mark.parametrize("item", sorted(SCRIPTS))
def test_release_as_shipped_reads_reproduced_with_its_lines(
    art_wheels: ArtWheels, version: str, item: int
) -> None:
    package = art_wheels.package(version)
    claim = _claim(_check(item, package))
    assert claim["reproduced"] is True
    assert claim["method"] == "read"
    for entry in claim["at"]:
        lines = (package.parent / entry["path"]).read_text(encoding="utf-8").splitlines()
        # The line to look for is verbatim in the range given, in this release.
        span = lines[entry["line"] - 1 : entry.get("end", entry["line"])]
        assert entry["look_for"] in [line.strip() for line in span]
    if version == "0.5.23":
        assert [(e["line"], e.get("end")) for e in claim["at"]] == AT_0_5_23[item]


@pytest.mark.parametrize("version", ["0.5.21", "0.5.23"])
@pytest.mark.parametrize("item", sorted(FIXES))
def test_the_audits_fix_applied_reads_fixed(
    art_wheels: ArtWheels, version: str, item: int, tmp_path: Path
) -> None:
    package = _patched(_copy(art_wheels, version, item, tmp_path), FIXES[item])
    assert _claim(_check(item, package))["reproduced"] is False


@pytest.mark.parametrize("case", sorted(NOT_FIXES))
def test_a_change_that_is_not_a_fix_still_reads_reproduced(
    art_wheels: ArtWheels, case: int, tmp_path: Path
) -> None:
    item = min(case, 11)  # case 12: item 11 with one wrapper of seven changed
    package = _patched(_copy(art_wheels, "0.5.23", item, tmp_path), NOT_FIXES[case])
    assert _claim(_check(item, package))["reproduced"] is True


@pytest.mark.parametrize("item", sorted(REMOVED))
def test_code_that_is_gone_reads_not_checked(
    art_wheels: ArtWheels, item: int, tmp_path: Path
) -> None:
    package = _patched(_copy(art_wheels, "0.5.23", item, tmp_path), REMOVED[item])
    reproduced, why = _claim(_check(item, package))
    assert reproduced is None
    assert "found" in why


@pytest.mark.parametrize("item", sorted(SCRIPTS))
def test_read_verdicts_validate_as_the_records_claims(art_wheels: ArtWheels, item: int) -> None:
    finding = next(f for f in load_catalog(ROOT).findings if f.item == item)
    claims = claim_results(finding, _check(item, art_wheels.package("0.5.23"))["claims"])
    (result,) = claims.values()
    assert result.verdict is ClaimVerdict.reproduced
    assert result.method is Method.read
    assert result.at and all(line.path.startswith("art/") for line in result.at)
