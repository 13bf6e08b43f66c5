"""Every verdict shows its evidence: the check_art contract's method / at / fix, the helpers
that find lines in a release, the fix lines items 7 and 8 find in real releases, and the
dating of the audit commit by its anchors."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from artbot.records.catalog import load_catalog
from artbot.status import ClaimResult, ClaimVerdict, FixEvidence, Method, SourceLine, StatusPoint
from artbot.status.dating import AnchorDating, ReleaseAnchors, load_dating
from artbot.verify.anchors import verify_anchors
from artbot.verify.code import CheckContractError, claim_results, line_problem, run_check
from artbot.verify.record import anchors_record, audit_point, keep_changes, record_status
from artbot.verify.tree import open_tree
from tests.helpers.wheels import default_wheels

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "repros"))
import _art_loss  # noqa: E402
import _evidence  # noqa: E402

VERSIONS = ("0.5.20", "0.5.21", "0.5.23")
SOURCE = """\
def f(x):
    y = x + 1
    if y:
        z = g(
            y,
        )
    else:
        warn(
            "skipped",
        )
    return z
"""


class FakeArt:
    name = "art"

    def __init__(self, files: dict[str, str]):
        self.files = files

    def source(self, relpath: str) -> str:
        return self.files.get(relpath, "")


def release_dir(version: str) -> Path:
    return default_wheels().tree(version)


# --------------------------------------------------------------------------- the helpers


def test_lines_span_statements_from_the_first_text_to_the_last() -> None:
    art = FakeArt({"m.py": SOURCE})
    assert _evidence.find_line(SOURCE, "y = x + 1") == 2
    assert _evidence.statement(SOURCE, 5) == (4, 6)  # inside the call: the assignment
    assert _evidence.statement(SOURCE, 3) == (3, 10)  # a compound statement's own line
    assert _evidence.lines(art, "m.py", "z = g(", '"skipped",') == {
        "path": "art/m.py",
        "line": 4,
        "end": 10,
        "look_for": '"skipped",',
    }
    assert _evidence.lines(art, "m.py", "absent") is None
    assert _evidence.lines(art, "m.py", "z = g(", "return z", look_for="y = x + 1") is None
    assert _evidence.function(art, "m.py", "f") == {
        "path": "art/m.py",
        "line": 1,
        "end": 11,
        "look_for": "def f(x):",
    }


def test_claim_keeps_fix_evidence_only_for_a_fixed_verdict_with_every_line_found() -> None:
    line = {"path": "art/m.py", "line": 2, "end": 2, "look_for": "y = x + 1"}
    assert "fix" in _evidence.claim(False, "d", method="ran", fix=[line])
    assert "fix" not in _evidence.claim(True, "d", method="ran", fix=[line])
    assert "fix" not in _evidence.claim(False, "d", method="ran", fix=[line, None])
    assert _evidence.claim(None, "why", method="read", at=[None]) == {
        "verdict": None,
        "detail": "why",
        "method": "read",
    }


# --------------------------------------------------------------------------- the contract


def finding7() -> Any:
    return load_catalog(REPO).get(7)


def test_the_contract_takes_method_at_and_fix_and_checks_each_line() -> None:
    finding = finding7()
    [cid] = [c.id for c in finding.claims]
    art = FakeArt({"m.py": SOURCE})
    read = art.source
    at = [{"path": "art/m.py", "line": 1, "end": 11, "look_for": "def f(x):"}]
    fix = {"lines": [{"path": "art/m.py", "line": 7, "end": 10, "look_for": '"skipped",'}]}

    def source(path: str) -> str | None:
        return read(path.removeprefix("art/"))

    got = claim_results(
        finding,
        {cid: {"verdict": False, "detail": "d", "method": "ran", "at": at, "fix": fix}},
        source=source,
    )[cid]
    assert got.verdict is ClaimVerdict.fixed and got.method is Method.ran
    assert got.at[0].line == 1 and got.fix is not None and got.fix.lines[0].end == 10
    # The check's default method; a pair is still a claim.
    assert claim_results(finding, {cid: (True, "x")}, method="modelled")[cid].method is (
        Method.modelled
    )
    assert claim_results(finding, {cid: (None, "why")}, method="ran")[cid].method is None
    bad: list[tuple[dict[str, Any], str]] = [
        ({"verdict": True, "method": "ran", "fix": fix}, "fix evidence on a reproduced"),
        ({"verdict": True, "method": "guessed"}, "guessed"),
        ({"verdict": True, "method": "read"}, "states the lines it read"),
        ({"verdict": True, "surprise": 1}, "unknown keys"),
        ({"verdict": False, "fix": {**fix, "change": {"identified": False}}}, "verify changes"),
        ({"verdict": True, "at": [{**at[0], "look_for": "def g(x):"}]}, "is not a line there"),
        ({"verdict": True, "at": [{**at[0], "end": 99}]}, "outside the file"),
        ({"verdict": True, "at": [{**at[0], "path": "art/none.py"}]}, "no such file"),
        ({"verdict": True, "at": [{**at[0], "path": "elsewhere/m.py"}]}, "no such file"),
    ]
    for value, message in bad:
        with pytest.raises(CheckContractError, match=message):
            claim_results(finding, {cid: value}, source=source)


def test_line_problem_accepts_the_look_for_anywhere_in_the_range() -> None:
    line = SourceLine(path="art/m.py", line=7, end=10, look_for='  "skipped",  ')
    assert line_problem(line, lambda p: SOURCE) is None
    assert "is not a line" in str(
        line_problem(line.model_copy(update={"end": 8}), lambda p: SOURCE)
    )


def test_the_audit_point_is_modelled() -> None:
    catalog = load_catalog(REPO)
    point = audit_point(catalog.get(7), catalog.audit, REPO)
    assert point is not None
    assert {c.method for c in point.claims.values()} == {Method.modelled}
    assert "model" in point.how


def test_a_recorded_change_survives_a_re_record_while_its_lines_stand() -> None:
    from artbot.status import Change

    lines = [SourceLine(path="art/loss.py", line=388, end=395, look_for="x")]
    change = Change(identified=True, commit="abc1234", pull=7, title="t")

    def point(fix_lines: list[SourceLine], with_change: bool) -> StatusPoint:
        fix = FixEvidence(lines=fix_lines, change=change if with_change else None)
        result = ClaimResult(verdict=ClaimVerdict.fixed, method=Method.ran, fix=fix)
        return StatusPoint(
            source="release",
            label="0.5.21",
            checked_on="2026-12-03",
            artbot_version="0",
            claims={"c": result},
        )

    old = record_status(7, None, None, point(lines, True))
    kept = record_status(7, old, None, point(lines, False))
    assert kept.points[0].claims["c"].fix.change == change  # type: ignore[union-attr]
    moved = [lines[0].model_copy(update={"line": 389})]
    assert keep_changes(point(lines, True), point(moved, False)).claims["c"].fix.change is None  # type: ignore[union-attr]


# --------------------------------------------------------------------------- dating


def release(label: str, at: list[str]) -> ReleaseAnchors:
    return ReleaseAnchors(label=label, checked_on="2026-12-03", at_lines=at, moved=0, missing=0)


def test_dating_places_the_audit_between_the_releases_its_anchors_disagree_on() -> None:
    dating = AnchorDating(audit="abc1234", anchors=4)
    for r in (
        release("0.5.21", ["b", "c"]),
        release("0.5.20", ["a", "b"]),
        release("0.5.23", ["c"]),
    ):
        dating = dating.with_release(r)
    assert [r.label for r in dating.releases] == ["0.5.20", "0.5.21", "0.5.23"]
    # c appears only after 0.5.20; a is gone in 0.5.21.
    assert dating.place() == ("0.5.20", "0.5.21")
    assert dating.sentence() == (
        "abc1234 lies after 0.5.20 and before 0.5.21: 2 of 4 anchors sit at their lines in "
        "0.5.20 and 2 in 0.5.21; 1 only in 0.5.21 (`c`), 1 only in 0.5.20 (`a`)"
    )
    same = AnchorDating(audit="abc1234", anchors=1, releases=[release("1", ["a"])])
    assert same.place() == (None, None)
    assert (
        same.sentence()
        == "abc1234 is not placed by its anchors: 1 of 1 anchors sit at their lines in 1"
    )


@pytest.mark.network
def test_the_recorded_dating_is_what_the_releases_measure_now(tmp_path: Path) -> None:
    catalog = load_catalog(REPO)
    recorded = load_dating(REPO)
    assert recorded is not None and catalog.dating == recorded
    root = tmp_path / "root"
    (root / "findings").mkdir(parents=True)
    for version in VERSIONS:
        tree = open_tree(release_dir(version), catalog.audit, label=version)
        anchors_record(root, catalog.audit, version, verify_anchors(catalog, tree))
    measured = load_dating(root)
    assert measured is not None
    strip = {"checked_on"}
    assert [r.model_dump(exclude=strip) for r in measured.releases] == [
        r.model_dump(exclude=strip) for r in recorded.releases
    ]
    assert measured.anchors == recorded.anchors
    assert measured.place() == ("0.5.20", "0.5.21")
    # lines artbot located itself in 0.5.20 (items 1-3) are not the audit's and date nothing
    located = {
        f"{f.item}:{loc.path}:{loc.start}-{loc.end}"
        for f in catalog.findings
        for loc in f.locations
        if loc.located_in is not None
    }
    assert located, "items 1-3 carry ranges artbot located in a release"
    counted = [a for r in measured.releases for a in r.at_lines]
    assert not located & set(counted)
    audit_anchors = [loc for f in catalog.findings for loc in f.locations if loc.anchor]
    assert measured.anchors == sum(loc.located_in is None for loc in audit_anchors)
    data = json.loads((root / "findings" / "status" / "anchors.json").read_text())
    assert data["audit"] == catalog.audit.commit


# --------------------------------------------------------------------------- real releases


@pytest.mark.network
@pytest.mark.parametrize("version", VERSIONS)
def test_the_models_clip_defaults_are_each_releases(version: str) -> None:
    source = (release_dir(version) / "art" / "loss.py").read_text(encoding="utf-8")
    defaults, first, last = _art_loss.epsilon_defaults_in(source)
    assert defaults == _art_loss.EPSILON_DEFAULTS
    assert "epsilon_high_default = 4.0" in source.splitlines()[last - 1]
    assert first < last


# The fixing lines of 0.5.21 (and unchanged in 0.5.23), as a maintainer reads them in the wheel.
FIX_LINES = {
    7: [("art/loss.py", 388, 395)],
    8: [("art/loss.py", 291, 295), ("art/loss.py", 301, 302)],
}


@pytest.mark.repro
@pytest.mark.network
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("item", [7, 8])
def test_items_7_and_8_ran_arts_function_and_find_the_fix_in_the_release(
    version: str, item: int
) -> None:
    catalog = load_catalog(REPO)
    tree = open_tree(release_dir(version), catalog.audit, label=version)
    result = run_check(catalog, tree, catalog.get(item))
    [claim] = result.claims.values()
    assert claim.method is Method.ran
    assert [a.look_for for a in claim.at][0] == "def loss_fn("
    if version == "0.5.20":
        assert claim.verdict is ClaimVerdict.reproduced and claim.fix is None, claim
        return
    assert claim.verdict is ClaimVerdict.fixed, claim
    assert claim.fix is not None
    assert [(f.path, f.line, f.end) for f in claim.fix.lines] == FIX_LINES[item]
    text = (release_dir(version) / "art" / "loss.py").read_text(encoding="utf-8").splitlines()
    for fix in claim.fix.lines:
        assert fix.look_for in [t.strip() for t in text[fix.line - 1 : fix.end]]
    if item == 8:
        assert "old -inf: loss 1.049 (sane)" in claim.detail
        assert "old -9999: loss 1.213e+08 (not sane)" in claim.detail


def test_the_recorded_status_of_items_7_and_8_shows_the_fix() -> None:
    from artbot.status import load_status

    for item, spans in FIX_LINES.items():
        status = load_status(REPO, item)
        assert status is not None
        assert status.points[0].source == "audit"
        assert {c.method for c in status.points[0].claims.values()} == {Method.modelled}
        for point in status.releases():
            [claim] = point.claims.values()
            assert claim.method is Method.ran
            assert claim.fix is not None, (item, point.label)
            assert [(f.path, f.line, f.end) for f in claim.fix.lines] == spans


class ReleaseArt:
    """What check_art's ``art`` offers for reading (name, source), on an unpacked wheel."""

    name = "art"

    def __init__(self, version: str):
        self.root = release_dir(version) / "art"

    def source(self, relpath: str) -> str:
        file = self.root / relpath
        return file.read_text(encoding="utf-8") if file.is_file() else ""


# How items 9 and 10 (their checks are another's) find 0.5.21's fixing lines with the helper.
HELPER_CALLS = {
    10: (
        "tinker_native/data.py",
        "if all(abs(reward - rewards[0]) <= 1e-12 for reward in rewards[1:]):",
        "std_reward = rewards_tensor.std(unbiased=False)",
        None,
        (37, 43),
    ),
    9: (
        "tinker/service.py",
        "row = parse_prefix_tree_row(",
        "for segment in row.segments",
        "group_ids.new_tensor((segment.group_id, *segment.ancestors)),",
        (137, 146),
    ),
}


@pytest.mark.network
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("item", sorted(HELPER_CALLS))
def test_the_helper_finds_the_fixes_of_items_9_and_10(version: str, item: int) -> None:
    relpath, first, last, look_for, span = HELPER_CALLS[item]
    found = _evidence.lines(ReleaseArt(version), relpath, first, last, look_for=look_for)
    if version == "0.5.20":
        assert found is None  # the fix is not there yet
        return
    assert found is not None
    assert (found["path"], found["line"], found["end"]) == (f"art/{relpath}", *span)


def test_a_points_method_is_its_weakest_claims() -> None:
    def result(method: Method | None, verdict: ClaimVerdict = ClaimVerdict.fixed) -> ClaimResult:
        return ClaimResult(verdict=verdict, method=method)

    def point(*results: ClaimResult) -> StatusPoint:
        claims = {f"c{i}": r for i, r in enumerate(results)}
        return StatusPoint(
            source="release", label="1", checked_on="2026-12-03", artbot_version="0", claims=claims
        )

    assert point(result(Method.ran), result(Method.read)).method is Method.read
    assert point(result(Method.ran), result(Method.modelled)).method is Method.modelled
    assert point(result(Method.ran)).method is Method.ran
    assert point(result(None, ClaimVerdict.not_checked)).method is None
