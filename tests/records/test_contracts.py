"""#51: one contract per claim, stated once, in the record (``claims[].contract``).

The record is the one place a claim's contract is written: what must hold, over which domain,
against which oracle and tolerance, and whose decision it is. The check (the repro script and the
``repros/_*.py`` modules it imports) and the regression test for ART's suite (which cannot read
artbot's records) each state its domain, oracle and tolerance in their own text, and these tests
hold both to the record's words: every ``;``-separated phrase of each, compared without case,
backticks or line breaks, is in one of the file's strings (a docstring, a ``COVERS``, a
message). Where the regression test covers less of the domain, ``test_covers`` is what it states
instead, and ``artbot test``'s reply says so (``tests/patchtest/test_answer.py``).

The rest keep each kind of error of #51 from coming back: a strict xfail only where the audit
decided the fix; an Expected that states artbot's contract is marked artbot's; a case artbot found
is a follow-up, never a claim of the audit's item.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from artbot.records.catalog import Catalog, load_catalog
from artbot.records.models import Claim, Contract, Finding
from tests.helpers.shipped import ALL_ITEMS, AUDIT_ITEMS, FOLLOW_UPS

ROOT = Path(__file__).resolve().parents[2]
CATALOG: Catalog = load_catalog(ROOT)

# Regression tests whose text does not yet state their claim's contract in the record's words:
# the item engineers of #51 align them (an entry here is a strict xfail, so it must be removed
# the day its test states the contract).
TEST_NOT_YET_ALIGNED: set[str] = set()
# #51's errors still in the records, each fixed by the item's engineer in the same round.
STRICT_NOT_YET_DECIDED: dict[int, str] = {}  # item -> why (401's was fixed in this round)
ARTBOT_CASES_IN_AUDIT_ITEM = {
    f"3-{cid}": "artbot's case under item 3: it belongs with follow-up 1001 (one mechanism)"
    for cid in (
        "nan-advantages-from-non-finite-rewards",
        "full-scale-advantage-for-near-equal-reward-groups",
    )
}


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("`", "")).strip().lower()


@cache
def _strings(path: str) -> tuple[str, ...]:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return tuple(
        _norm(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def _unstated(terms: dict[str, str], paths: list[str]) -> list[str]:
    """The contract's phrases that none of ``paths``' strings contains."""
    said = [s for p in paths for s in _strings(p)]
    return [
        f"{key}: {phrase.strip()!r}"
        for key, text in terms.items()
        for phrase in text.split(";")
        if not any(_norm(phrase) in s for s in said)
    ]


def _claims(items: tuple[int, ...]) -> list[tuple[Finding, Claim]]:
    return [(f, c) for f in CATALOG.findings if f.item in items for c in f.claims]


def _id(pair: tuple[Finding, Claim]) -> str:
    return f"{pair[0].item}-{pair[1].id}"


def _contract(claim: Claim) -> Contract:
    assert claim.contract is not None
    return claim.contract


@pytest.mark.parametrize("pair", _claims(ALL_ITEMS), ids=_id)
def test_every_claim_states_its_contract_in_the_record(pair: tuple[Finding, Claim]) -> None:
    finding, claim = pair
    assert claim.contract is not None, f"item {finding.item}: claim {claim.id} has no contract"


@pytest.mark.parametrize("pair", _claims(ALL_ITEMS), ids=_id)
def test_the_check_states_the_records_contract(pair: tuple[Finding, Claim]) -> None:
    finding, claim = pair
    paths = [finding.repro, *CATALOG.helpers(finding.repro)]
    missing = _unstated(_contract(claim).terms(), paths)
    assert not missing, f"item {finding.item} {claim.id}: the check does not state {missing}"


def _tested() -> list[object]:
    return [
        pytest.param(
            pair,
            marks=pytest.mark.xfail(
                strict=True, reason="the item's engineer aligns its test with the record"
            )
            if _id(pair) in TEST_NOT_YET_ALIGNED
            else (),
        )
        for pair in _claims(ALL_ITEMS)
        if pair[0].item in CATALOG.regression
    ]


@pytest.mark.parametrize("pair", _tested(), ids=_id)
def test_the_regression_test_states_the_records_contract(pair: tuple[Finding, Claim]) -> None:
    finding, claim = pair
    terms = _contract(claim).terms(for_test=True)
    missing = _unstated(terms, [CATALOG.regression[finding.item]])
    assert not missing, f"item {finding.item} {claim.id}: the regression test lacks {missing}"


def test_the_phrase_matching_sees_a_changed_tolerance() -> None:
    """The comparison is not vacuous: a tolerance the check does not state is caught."""
    finding = CATALOG.get(7)
    contract = _contract(finding.claims[0])
    paths = [finding.repro, *CATALOG.helpers(finding.repro)]
    assert not _unstated(contract.terms(), paths)
    changed = contract.model_copy(update={"tolerance": "16 ulps"})
    assert _unstated(changed.terms(), paths) == ["tolerance: '16 ulps'"]


def _strictness() -> list[object]:
    return [
        pytest.param(
            item,
            marks=pytest.mark.xfail(strict=True, reason=STRICT_NOT_YET_DECIDED[item])
            if item in STRICT_NOT_YET_DECIDED
            else (),
        )
        for item in sorted(CATALOG.regression)
    ]


@pytest.mark.parametrize("item", _strictness())
def test_a_strict_xfail_only_where_the_audit_decided_the_fix(item: int) -> None:
    """An audit item's regression test is strict only if the audit decided some claim's contract;
    a follow-up's only if the item it follows is strict too (401 extends item 4, whose test is
    non-strict: it cannot demand the fix that item 4 leaves open)."""
    if not CATALOG.regression_strict.get(item, True):
        return
    finding = CATALOG.get(item)
    if finding.follows is not None:
        followed = CATALOG.regression_strict.get(finding.follows, True)
        assert followed, f"{item}: strict, while item {finding.follows}'s test is not"
    else:
        whose = {_contract(c).by for c in finding.claims}
        assert "audit" in whose, f"item {item}: strict, but artbot chose every contract"


@pytest.mark.parametrize("item", AUDIT_ITEMS)
def test_an_expected_stating_artbots_contract_is_marked_artbots(item: int) -> None:
    finding = CATALOG.get(item)
    if any(_contract(c).by == "artbot" for c in finding.claims):
        assert "expected" in finding.additions, (
            f"item {item}: artbot chose a contract, so its Expected is artbot's: mark it "
            "(additions: [expected])"
        )


# An audit item's claim is in the audit's words: most of its words (of 4 letters or more) are in
# the audit's text for the item (tracking-issue.md). Measured on the records: the audit's claims
# share 0.54-1.0 of them; artbot's two cases filed under item 3 share 0.0 and 0.19.
AUDIT_WORDS_MIN = 0.4
TRACKING = (ROOT / "findings" / "tracking-issue.md").read_text(encoding="utf-8")


def _audit_text(finding: Finding) -> str:
    """The audit's text for the item: its numbered section, or its line of the issues it had."""
    if finding.issue is not None:
        found = re.search(rf"^• #{finding.issue}: .*$", TRACKING, re.M)
    else:
        found = re.search(rf"^{finding.item}\. .*?(?=^\d+\. |\Z)", TRACKING, re.M | re.S)
    assert found is not None, f"item {finding.item} is not in the tracking issue"
    return found.group(0)


def _words(text: str) -> set[str]:
    return {
        w.strip(".") for w in re.findall(r"[a-z0-9≥.-]+", text.lower()) if len(w.strip(".")) > 3
    }


def _audit_claims() -> list[object]:
    return [
        pytest.param(
            pair,
            marks=pytest.mark.xfail(strict=True, reason=ARTBOT_CASES_IN_AUDIT_ITEM[_id(pair)])
            if _id(pair) in ARTBOT_CASES_IN_AUDIT_ITEM
            else (),
        )
        for pair in _claims(AUDIT_ITEMS)
    ]


@pytest.mark.parametrize("pair", _audit_claims(), ids=_id)
def test_an_audit_items_claim_is_the_audits_not_a_case_artbot_found(
    pair: tuple[Finding, Claim],
) -> None:
    """An audit item's claims are the audit's: a case artbot found beyond them is a follow-up's
    claim (its own record), so a fix of the audit's claims reads as such in the item's line."""
    finding, claim = pair
    words = _words(claim.text)
    shared = len(words & _words(_audit_text(finding))) / max(1, len(words))
    assert shared >= AUDIT_WORDS_MIN, (
        f"item {finding.item}: claim {claim.id} shares {shared:.2f} of its words with the audit: "
        "a case artbot found is a follow-up's claim"
    )


def test_the_audit_words_measure_tells_a_case_of_artbots_apart() -> None:
    finding = CATALOG.get(8)
    audit = _words(_audit_text(finding))
    ours = "A group whose rewards are all -inf, such as [-inf] x 4, gets NaN advantages."
    assert len(_words(ours) & audit) / len(_words(ours)) < AUDIT_WORDS_MIN
    theirs = finding.claims[0].text
    assert len(_words(theirs) & audit) / len(_words(theirs)) >= AUDIT_WORDS_MIN


@pytest.mark.parametrize("item", FOLLOW_UPS)
def test_a_follow_ups_contract_is_artbots(item: int) -> None:
    assert {_contract(c).by for c in CATALOG.get(item).claims} == {"artbot"}


def test_a_contract_artbot_chose_says_why() -> None:
    fields = {"must": "m", "domain": "d", "oracle": "o", "tolerance": "t"}
    with pytest.raises(ValueError, match="why"):
        Contract(by="artbot", **fields)
    with pytest.raises(ValueError, match="why"):
        Contract(by="audit", why="w", **fields)
    both = Contract(by="audit", test_covers="less", **fields)
    assert both.terms(for_test=True)["domain"] == "less" and both.terms()["domain"] == "d"
