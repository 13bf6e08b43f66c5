"""The *read* checks of items 4, 5 and 11 (``check_art``) on the release sources, both ways.

Each check reads one release's text and must come out either way: on the release as shipped
it finds the anchored code (reproduced, with ``file:line`` in that release); on a copy with the
audit's fix applied (the item's repros/controls/ FIX, as tests/test_controls.py applies it) it
says fixed, with fixing lines that hold in the copy; on a copy with a change that is *not* a
fix (an upcast after the BF16 store, an FP32 sum cast back to BF16, one wrapper of seven) it
still says reproduced; on a copy without the code it says not checked. What it returns
validates as the record's claims through ``artbot.verify.code.claim_results``.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from artbot.catalog import load_catalog
from artbot.scripts import import_script
from artbot.status import ClaimVerdict, Method
from artbot.verify.code import claim_results
from artbot.verify.isolation import ArtModules
from tests.controls import Edit, controlled_copy, load_control
from tests.wheels import ArtWheels

ROOT = Path(__file__).resolve().parents[1]
REPROS = ROOT / "repros"
SCRIPTS = {4: "item04_bf16_lm_head", 5: "item05_bf16_grad_accum", 11: "item11_bf16_lora_add"}

# Where each check must find its code in 0.5.23 (read by hand in the wheel).
AT_0_5_23 = {
    4: [(4857, 4880), (4869, 4873)],
    5: [(640, 641), (3309, 3316)],
    11: [(1182, 1183), (1606, None)],
}

# Changes that look like fixes and are not (edits as in repros/controls/: file glob, regex,
# replacement): the verdict must stay reproduced.
NOT_FIXES: dict[int, list[Edit]] = {
    # Item 4: the logits upcast after the BF16 store.
    4: [
        (
            "trainer_rank/_impl.py",
            r"^(\s*)return _batch_seq_logits\(\n(\s*)model\._scale_logits\(logits\),",
            r"\g<1>logits = logits.float()\n\g<0>",
        )
    ],
    # Item 11: the FP32 sum cast back to BF16.
    11: [
        (
            "megatron/lora.py",
            r"return base_output \+ lora_output, bias_output",
            "return (base_output.float() + lora_output.float()).to(base_output.dtype), bias_output",
        )
    ],
    # Item 11 (case 12): one wrapper of seven adding in FP32.
    12: [
        (
            "megatron/lora.py",
            r"return base_output \+ lora_output, bias_output",
            "return base_output.float() + lora_output.float(), bias_output",
        )
    ],
}
# Removing the anchored code: the verdict must be not checked.
REMOVED: dict[int, list[Edit]] = {
    4: [("trainer_rank/_impl.py", r"logits, _ = output_layer\(", "logits = output_layer.forward(")],
    5: [("trainer_rank/_impl.py", r"param\.grad\.detach\(\)\.float\(\)", "param.main_grad")],
    11: [("megatron/lora.py", r"out = \(x @ a_t\) @ b_t", "out = lora_kernel(x, a_t, b_t)")],
}


def _repro(item: int) -> ModuleType:
    return import_script(REPROS / f"{SCRIPTS[item]}.py", f"read_{SCRIPTS[item]}")


def _check(item: int, package: Path) -> dict[str, Any]:
    result: dict[str, Any] = _repro(item).check_art(ArtModules(package))
    return result


def _claim(result: dict[str, Any]) -> Any:
    (value,) = result["claims"].values()
    return value


def _reader(package: Path) -> Any:
    """What verify checks cited lines with: a file's text by its wheel path (art/x.py)."""

    def read(path: str) -> str | None:
        file = package.parent / path
        return file.read_text(encoding="utf-8") if file.is_file() else None

    return read


def _edited(art_wheels: ArtWheels, version: str, edits: list[Edit], dest: Path) -> Path:
    """The ``art/`` package of a linked copy of ``version`` with ``edits`` applied."""
    return controlled_copy(art_wheels.tree(version), dest, edits) / "art"


@pytest.mark.parametrize("version", ["0.5.20", "0.5.21", "0.5.23"])
@pytest.mark.parametrize("item", sorted(SCRIPTS))
def test_release_as_shipped_reads_reproduced_with_its_lines(
    art_wheels: ArtWheels, version: str, item: int
) -> None:
    package = art_wheels.package(version)
    claim = _claim(_check(item, package))
    assert claim["verdict"] is True
    assert claim["method"] == "read"
    for entry in claim["at"]:
        lines = (package.parent / entry["path"]).read_text(encoding="utf-8").splitlines()
        # The line to look for is verbatim in the range given, in this release.
        span = lines[entry["line"] - 1 : entry.get("end", entry["line"])]
        assert entry["look_for"] in [line.strip() for line in span]
    if version == "0.5.23":
        assert [(e["line"], e.get("end")) for e in claim["at"]] == AT_0_5_23[item]


@pytest.mark.parametrize("version", ["0.5.21", "0.5.23"])
@pytest.mark.parametrize("item", sorted(SCRIPTS))
def test_the_audits_fix_applied_reads_fixed(
    art_wheels: ArtWheels, version: str, item: int, tmp_path: Path
) -> None:
    control = load_control(item)
    assert control is not None
    package = _edited(art_wheels, version, control.edits("fix", version), tmp_path / "fix")
    result = _check(item, package)
    assert _claim(result)["verdict"] is False
    # The fixing lines it shows are in the edited copy, as verify checks them.
    finding = next(f for f in load_catalog(ROOT).findings if f.item == item)
    (fixed,) = claim_results(finding, result["claims"], source=_reader(package)).values()
    assert fixed.verdict is ClaimVerdict.fixed and fixed.fix is not None


@pytest.mark.parametrize("case", sorted(NOT_FIXES))
def test_a_change_that_is_not_a_fix_still_reads_reproduced(
    art_wheels: ArtWheels, case: int, tmp_path: Path
) -> None:
    item = min(case, 11)  # case 12: item 11 with one wrapper of seven changed
    package = _edited(art_wheels, "0.5.23", NOT_FIXES[case], tmp_path / "not-fix")
    assert _claim(_check(item, package))["verdict"] is True


@pytest.mark.parametrize("item", sorted(REMOVED))
def test_code_that_is_gone_reads_not_checked(
    art_wheels: ArtWheels, item: int, tmp_path: Path
) -> None:
    package = _edited(art_wheels, "0.5.23", REMOVED[item], tmp_path / "removed")
    reproduced, why = _claim(_check(item, package))
    assert reproduced is None
    assert "found" in why


@pytest.mark.parametrize("item", sorted(SCRIPTS))
def test_read_verdicts_validate_as_the_records_claims(art_wheels: ArtWheels, item: int) -> None:
    finding = next(f for f in load_catalog(ROOT).findings if f.item == item)
    package = art_wheels.package("0.5.23")
    claims = claim_results(finding, _check(item, package)["claims"], source=_reader(package))
    (result,) = claims.values()
    assert result.verdict is ClaimVerdict.reproduced
    assert result.method is Method.read
    assert result.at and all(line.path.startswith("art/") for line in result.at)
