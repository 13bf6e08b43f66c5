"""#51: the issue says whose each contract is. Where artbot, not the audit, chose what a fix of an
audit item must satisfy, the rendered issue says so and why (the contract's ``why``), or its
regression test's line already says it (a non-strict xfail: "the audit does not decide the fixed
behaviour"); an Expected of artbot's is marked as artbot's addition."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.records.catalog import load_catalog
from tests.helpers.shipped import AUDIT_ITEMS

REPO = Path(__file__).resolve().parents[2]
CATALOG = load_catalog(REPO)
UNDECIDED = "the audit does not decide the fixed behaviour"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[int, str]:
    out = tmp_path_factory.mktemp("rendered")
    args = ["--root", str(REPO), "render", "--all", "--out", str(out)]
    result = CliRunner(env={"GITHUB_ACTIONS": None, "GITHUB_REPOSITORY": None}).invoke(cli, args)
    assert result.exit_code == 0, result.output
    return {int(p.stem): p.read_text(encoding="utf-8") for p in out.glob("*.md")}


@pytest.mark.parametrize("item", AUDIT_ITEMS)
def test_an_artbot_contract_is_said_to_be_artbots_and_why(
    rendered: dict[int, str], item: int
) -> None:
    if item not in rendered:
        pytest.skip(f"item {item} is not filed by artbot (it has an issue of its own)")
    text = " ".join(rendered[item].split())
    finding = CATALOG.get(item)
    for claim in finding.claims:
        contract = claim.contract
        if contract is None or contract.by == "audit":
            continue
        assert contract.why is not None
        said = f"Contract of `{claim.id}`: artbot's**, as {' '.join(contract.why.split())}"
        assert said in text or UNDECIDED in text, f"item {item}: {claim.id}'s contract unmarked"
        assert "**Expected:**" in text and "_(artbot's addition)_" in text
