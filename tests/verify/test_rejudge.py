"""#53: artbot judges each claim from the check's tape, in its own process (verify/rejudge.py).

The tapes here are what a check process could hand back, honest or not; the judge is a repro's
(``repros/_domain.py``'s Oracle): the verdict is artbot's, whatever the check said."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from artbot.records.catalog import load_catalog
from artbot.repro.scripts import import_script
from artbot.status import ClaimResult, ClaimVerdict, Method
from artbot.verify import rejudge
from artbot.verify.code import CodeResult, CodeStatus, checkable
from artbot.verify.limits import MAX_TAPE_BYTES, MAX_TAPE_ENTRIES, capped_tapes
from artbot.verify.results import result_from_json
from artbot.verify.tree import open_tree
from tests.helpers.confine import SPLIT_CLAIM, split_item7

REPO = Path(__file__).resolve().parents[2]
DOMAIN = import_script(REPO / "repros" / "_domain.py", "_test_rejudge_domain")
CID = "square"


def judge(case: dict[str, Any], raw: Any) -> Any:
    """The property: ``raw["y"]`` is ``case["x"]`` squared (a KeyError on a garbled raw)."""
    want = case["x"] ** 2
    got = raw["y"]
    return None if got == want else DOMAIN.Failure(measured=got, bound=want)


ORACLE = DOMAIN.Oracle(
    judge=judge,
    edges=lambda: [{"x": 0}, {"x": 3}],
    sample=lambda rng: {"x": rng.randint(-(10**6), 10**6)},
    draws=4,
)


def planned(seed: int = 7) -> rejudge.Plan:
    plan = rejudge.Plan(seed=seed, helpers=DOMAIN)
    plan.oracles[1] = {CID: ORACLE}
    plan.inputs[1] = {CID: ORACLE.plan(random.Random(seed))}
    return plan


def child(verdict: ClaimVerdict, tape: list[dict[str, Any]], **claims: ClaimResult) -> CodeResult:
    said = ClaimResult(verdict=verdict, detail="the check's own words", method=Method.ran)
    return CodeResult(
        1,
        CodeStatus.fixed if verdict is ClaimVerdict.fixed else CodeStatus.reproduced,
        "openpipe-art 0.5.20",
        "detail",
        claims={CID: said, **claims},
        tapes={CID: tape},
    )


def honest(plan: rejudge.Plan, wrong: set[int] = frozenset()) -> list[dict[str, Any]]:  # type: ignore[assignment]
    return [
        {"case": c, "raw": {"y": c["x"] ** 2 + (1 if n in wrong else 0)}}
        for n, c in enumerate(plan.inputs[1][CID])
    ]


def test_every_drawn_input_measured_and_passing_is_fixed_by_artbot() -> None:
    plan = planned()
    got = plan.judge(child(ClaimVerdict.fixed, honest(plan)))
    claim = got.claims[CID]
    assert got.status is CodeStatus.fixed and claim.verdict is ClaimVerdict.fixed
    assert got.judged == {CID: rejudge.BY_ARTBOT} and got.seed == 7
    assert claim.domain is not None and claim.domain.seed == 7 and claim.domain.inputs == 6
    assert claim.detail == "the check's own words"  # they agree: the check's detail stays


def test_a_failing_output_is_reproduced_whatever_the_check_said() -> None:
    plan = planned()
    got = plan.judge(child(ClaimVerdict.fixed, honest(plan, wrong={1, 4})))
    claim = got.claims[CID]
    assert got.status is CodeStatus.reproduced and claim.verdict is ClaimVerdict.reproduced
    assert "the check's process said fixed; artbot's judgement of its outputs: reproduced" in (
        claim.detail
    )
    last = plan.inputs[1][CID][4]  # the last failing entry is the counterexample
    assert claim.domain is not None and claim.domain.counterexample is not None
    assert claim.domain.counterexample.inputs == {"x": last["x"]}
    assert claim.domain.counterexample.measured == last["x"] ** 2 + 1
    assert "differs from the check's process" in got.detail


@pytest.mark.parametrize("drop", [[0], [2, 5], list(range(6))])
def test_inputs_the_check_did_not_measure_are_could_not_run_never_fixed(drop: list[int]) -> None:
    plan = planned()
    tape = [e for n, e in enumerate(honest(plan)) if n not in drop]
    tape += [{"case": {"x": 1000}, "raw": {"y": 10**6}}]  # one the check chose: no substitute
    got = plan.judge(child(ClaimVerdict.fixed, tape))
    assert got.status is CodeStatus.could_not_run
    assert got.claims[CID].verdict is ClaimVerdict.not_checked
    want = f"the check's process measured {6 - len(drop)} of the 6 inputs artbot drew"
    assert want in got.claims[CID].detail and want in got.detail


@pytest.mark.parametrize("raw", [None, "fixed", {"z": 1}, [1, 2], {"y": "nan"}])
def test_a_raw_output_the_judge_cannot_read_is_a_failure(raw: Any) -> None:
    plan = planned()
    tape = honest(plan)
    tape[2] = {"case": tape[2]["case"], "raw": raw}
    got = plan.judge(child(ClaimVerdict.fixed, tape))
    assert got.claims[CID].verdict is ClaimVerdict.reproduced, got
    assert got.claims[CID].domain is not None


def test_a_judge_that_answers_neither_none_nor_a_failure_fails_the_entry() -> None:
    plan = planned()
    plan.oracles[1] = {CID: DOMAIN.Oracle(judge=lambda case, raw: False)}
    got = plan.judge(child(ClaimVerdict.fixed, honest(plan)))
    assert got.claims[CID].verdict is ClaimVerdict.reproduced
    ce = got.claims[CID].domain.counterexample  # type: ignore[union-attr]
    assert ce is not None and ce.measured == "the judge answered bool"


def test_cases_compare_as_json_whatever_the_order_of_their_keys() -> None:
    plan = rejudge.Plan(seed=1, helpers=DOMAIN)
    plan.oracles[1] = {CID: ORACLE}
    plan.inputs[1] = {CID: [{"x": 2, "dtype": "bf16", "shape": [2, 3]}]}
    tape = [{"case": {"shape": [2, 3], "dtype": "bf16", "x": 2}, "raw": {"y": 4}}]
    assert plan.judge(child(ClaimVerdict.fixed, tape)).status is CodeStatus.fixed


def test_a_claim_without_an_oracle_could_not_run() -> None:
    """Its verdict would be the check's process's own: never taken, whatever it says."""
    plan = planned()
    other = ClaimResult(verdict=ClaimVerdict.fixed, detail="said by the check", method=Method.ran)
    result = child(ClaimVerdict.fixed, honest(plan), other=other)
    strict = plan.judge(result)
    assert strict.judged == {CID: rejudge.BY_ARTBOT, "other": rejudge.IN_CHECK}
    assert strict.status is CodeStatus.could_not_run
    assert strict.claims["other"].verdict is ClaimVerdict.not_checked
    assert "declares no Oracle" in strict.claims["other"].detail


def test_the_tapes_are_capped_in_entries_and_bytes() -> None:
    entry = {"case": {"x": 1}, "raw": {"y": 1}}
    many = capped_tapes({CID: [entry] * (MAX_TAPE_ENTRIES + 5)})
    assert len(many[CID]) == MAX_TAPE_ENTRIES
    big = {"case": {"x": 1}, "raw": {"y": "z" * (MAX_TAPE_BYTES // 3)}}
    assert len(capped_tapes({CID: [big] * 5})[CID]) == 2
    odd = capped_tapes({CID: [entry, {"case": 1}, "x", {**entry, "verdict": "fixed"}], 3: []})
    assert odd == {CID: [entry]}


def test_the_tape_crosses_from_the_check_as_json_and_only_for_declared_claims() -> None:
    plan = planned()
    sent = child(ClaimVerdict.fixed, honest(plan)).as_json(tapes=True)
    sent["tapes"]["undeclared"] = [{"case": {"x": 1}, "raw": {"y": 1}}]
    back = result_from_json(json.loads(json.dumps(sent)), {CID}, "openpipe-art 0.5.20")
    assert set(back.tapes) == {CID} and back.tapes[CID] == honest(plan)
    assert "tapes" not in plan.judge(back).as_json()  # the report shows who judged, not tapes
    assert plan.judge(back).as_json()["judged"] == {CID: rejudge.BY_ARTBOT}


def test_claims_without_an_oracle_are_listed() -> None:
    """Every claim whose repro declares an Oracle draws JSON inputs, the same for the same seed;
    none may be without one (it would come out "could not run")."""
    catalog = load_catalog(REPO)
    missing = []
    for finding in checkable(catalog):
        oracles = rejudge.oracles_of(catalog, finding)
        for claim in finding.claims:
            oracle = oracles.get(claim.id)
            if oracle is None:
                missing.append(f"{finding.item}:{claim.id}")
                continue
            drawn = oracle.plan(random.Random(5))
            assert drawn, f"item {finding.item} claim {claim.id} draws no input"
            assert drawn == oracle.plan(random.Random(5)) == json.loads(json.dumps(drawn))
    assert not missing, f"claims without an Oracle: {', '.join(missing)}"


def test_verify_says_who_judged_and_the_seed_once_the_run_is_over() -> None:
    plan = planned(seed=99)
    other = ClaimResult(verdict=ClaimVerdict.fixed, detail="x", method=Method.ran)
    results = [plan.judge(child(ClaimVerdict.fixed, honest(plan), other=other))]
    assert rejudge.judged_line(results) == (
        "artbot judged 1 claim from the check's outputs on inputs it drew (seed 99); "
        "1 claim without an Oracle, not judged (could not run)"
    )
    nothing = CodeResult(1, CodeStatus.could_not_run, "openpipe-art 0.5.20", "broken")
    assert plan.judge(nothing) == nothing and rejudge.judged_line([nothing]) is None


# Rewrites the check's verdict to "fixed" from inside loss.py, as a patch's code could.
FORGED_VERDICT = """
import sys
frame = sys._getframe(1)
while frame is not None and "check_art" not in frame.f_globals:
    frame = frame.f_back
evidence = frame.f_globals["_evidence"]
claim = evidence.claim
evidence.claim = lambda verdict, detail, **kw: claim(False, "forged", **{**kw, "fix": None})
"""


@pytest.mark.network
@pytest.mark.repro
def test_the_in_process_path_judges_as_the_confined_one(place: Path) -> None:
    """``verify_code`` (in-process: the tests' and the controls' path) draws and judges as
    ``verify_code_apart`` does: a patch that rewrites the verdict alone is still reproduced."""
    for version, appended, want in (
        ("0.5.21", "", ClaimVerdict.fixed),
        ("0.5.20", "", ClaimVerdict.reproduced),
        ("0.5.20", FORGED_VERDICT, ClaimVerdict.reproduced),
    ):
        folder = place / version / str(len(appended))
        folder.mkdir(parents=True)
        tree = split_item7(folder, version, appended)
        catalog = load_catalog(folder / "checkout")
        [result] = rejudge.verify_code(catalog, open_tree(tree, catalog.audit), seed=3)
        claim = result.claims[SPLIT_CLAIM]
        assert claim.verdict is want and result.status.value == want.value, result
        assert result.judged == {SPLIT_CLAIM: rejudge.BY_ARTBOT} and result.seed == 3
        if appended:
            assert claim.detail.startswith("the check's process said fixed; artbot's judgement")


def test_a_plan_over_its_cap_is_refused_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    catalog = load_catalog(REPO)
    finding = checkable(catalog)[0]
    cid = finding.claims[0].id
    huge = DOMAIN.Oracle(judge=judge, sample=lambda rng: {"x": "y" * 65536}, draws=200)
    monkeypatch.setattr(rejudge, "oracles_of", lambda catalog, f: {cid: huge})
    with pytest.raises(ValueError, match="plan is over"):
        rejudge.draw(catalog, [finding], seed=1)
    monkeypatch.setattr(rejudge, "oracles_of", lambda catalog, f: {cid: ORACLE})
    assert rejudge.draw(catalog, [finding], seed=1).inputs == {
        finding.item: {cid: ORACLE.plan(random.Random(1))}
    }


@pytest.mark.parametrize("status", ["fixed", "not checked"])
def test_a_claim_the_check_leaves_out_is_judged_all_the_same(status: str) -> None:
    """The check's process reports a "fixed" item and no claims (or not this one): artbot
    judges the claim from the tape, and without a tape it could not run."""
    plan = planned()
    bare = CodeResult(1, CodeStatus(status), "openpipe-art 0.5.20", "forged")
    got = plan.judge(replace(bare, tapes={CID: honest(plan, wrong={0})}))
    assert got.status is CodeStatus.reproduced and got.judged == {CID: rejudge.BY_ARTBOT}
    assert got.detail.startswith("artbot's judgement differs")
    empty = plan.judge(bare)
    assert empty.status is CodeStatus.could_not_run and "0 of the 6 inputs" in empty.detail
