"""Per-claim verdicts: the repros print them, the runner stores them, the catalog checks their ids,
and each claim's verdict flips when the repro's fix knob is applied."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from artbot.errors import CatalogInvalid
from artbot.records.catalog import load_catalog
from artbot.repro.run import parse_claims
from artbot.repro.scripts import import_script

ROOT = Path(__file__).resolve().parents[2]
REPROS = ROOT / "repros"


def _repro(stem: str) -> ModuleType:
    return import_script(next(REPROS.glob(f"{stem}_*.py")))


def test_derived_verdict() -> None:
    common = import_script(REPROS / "_common.py")
    derive = common.derive_verdict
    assert derive(["reproduced", "reproduced"]) == "reproduced"
    assert derive(["fixed", "reproduced"]) == "partial"
    assert derive(["fixed", "not checked (needs CUDA)"]) == "fixed"
    assert derive(["not checked (needs CUDA)"]) == "not checked"
    assert derive(["reproduced", "not checked (needs CUDA)"]) == "reproduced"


def test_report_prints_claim_lines_before_the_verdict() -> None:
    common = import_script(REPROS / "_common.py")
    report = common.Report(item="9", title="t", models="m")
    report.claim("wrong-per-datum-masks", False)
    report.claim("one-optimizer-step-per-packed-row", True)
    report.claim("other", None, "needs CUDA / Transformer Engine")
    lines = report.text().splitlines()
    assert lines[-4:] == [
        "claim wrong-per-datum-masks: fixed",
        "claim one-optimizer-step-per-packed-row: reproduced",
        "claim other: not checked (needs CUDA / Transformer Engine)",
        "verdict: partial",
    ]
    assert parse_claims(report.text()) == {
        "wrong-per-datum-masks": "fixed",
        "one-optimizer-step-per-packed-row": "reproduced",
        "other": "not checked (needs CUDA / Transformer Engine)",
    }


def test_every_finding_declares_claims_and_stored_results_match() -> None:
    catalog = load_catalog(ROOT)
    for finding in catalog.findings:
        assert finding.claims, f"item {finding.item} declares no claims"
        data = json.loads((ROOT / f"findings/results/{finding.item:02d}.json").read_text())
        if data.get("claims"):
            assert set(data["claims"]) == {c.id for c in finding.claims}


def test_catalog_rejects_a_result_whose_claims_differ(tmp_path: Path) -> None:
    for part in ("findings", "repros"):
        shutil.copytree(ROOT / part, tmp_path / part)
    result = tmp_path / "findings/results/07.json"
    data = json.loads(result.read_text())
    data["claims"] = {"not-a-claim-of-item-7": "reproduced"}
    result.write_text(json.dumps(data))
    with pytest.raises(CatalogInvalid, match="not-a-claim-of-item-7"):
        load_catalog(tmp_path)


def test_item03_each_claim_flips_with_the_fix() -> None:
    """Item 3 holds the audit's two claims; artbot's two cases on the same path (rewards equal
    up to float noise, equal -inf rewards) are follow-up 1001's (issue #51), measured by item 3's
    batches and flipped by the same fix."""
    m = _repro("item03")
    claims = ("full-scale-advantage-for-equal-reward-groups", "nan-advantages")
    follow_up = (
        "nan-advantages-from-non-finite-rewards",
        "full-scale-advantage-for-near-equal-reward-groups",
    )
    measured = m.measure()
    assert m.claim_verdicts(measured) == dict.fromkeys(claims, True)
    assert m.follow_up_verdicts(measured) == dict.fromkeys(follow_up, True)
    fixed = m.measure(m.grpo_advantages_fixed, m.fixed_pack)
    assert m.claim_verdicts(fixed) == dict.fromkeys(claims, False)
    assert m.follow_up_verdicts(fixed) == dict.fromkeys(follow_up, False)
    follow = _repro("item1001")
    assert set(follow_up) < {c for c in follow.build_report().claims}


@pytest.mark.parametrize("stem", ["item07", "item08"])
def test_single_claim_flips_with_the_fix(stem: str) -> None:
    m = _repro(stem)
    assert m.is_reproduced(m.measure(m.loss_fn))
    assert not m.is_reproduced(m.measure(m.loss_fn_fixed))
