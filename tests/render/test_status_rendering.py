"""The status as an issue shows it (#22.2 render side, #22.6): each verdict's method and lines,
each fix's lines and upstream change, the audit commit's place, and a reader's order.

The status records here are hand-written fixtures in the schema of artbot/status/, not
measurements: they only exercise the rendering.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from artbot.records.catalog import load_catalog
from artbot.render.status_view import one_line, status_view
from artbot.status import (
    Change,
    ClaimResult,
    ClaimVerdict,
    FixEvidence,
    ItemStatus,
    Method,
    SourceLine,
    StatusPoint,
    load_status,
)
from artbot.status.dating import DATING_FILE, AnchorDating
from tests.helpers.golden import render_issue
from tests.helpers.shipped import AUDIT_ITEMS

REPO = Path(__file__).resolve().parents[2]
ITEMS = AUDIT_ITEMS  # the follow-ups have no recorded status (tests/records/test_followups.py)


@pytest.fixture(scope="module")
def catalog():  # type: ignore[no-untyped-def]
    return load_catalog(REPO)


def _point(source: str, label: str, claims: dict[str, ClaimResult]) -> StatusPoint:
    return StatusPoint(
        source=source,  # type: ignore[arg-type]
        label=label,
        checked_on="2026-12-03",
        artbot_version="0.1.0",
        claims=claims,
    )


def fixed_with_evidence(cid: str, change: Change) -> ItemStatus:
    """Item 7's shape: modelled at the audit, fixed from 0.5.21 on, run against ART's code."""
    fix21 = FixEvidence(
        lines=[SourceLine(path="art/loss.py", line=387, end=395, look_for="if a | b:")],
        change=change,
    )
    fix23 = FixEvidence(lines=[SourceLine(path="art/loss.py", line=390, end=398)])
    return ItemStatus(
        item=7,
        points=[
            _point(
                "audit",
                "e2a406a48",
                {cid: ClaimResult(verdict=ClaimVerdict("reproduced"), method=Method.modelled)},
            ),
            _point(
                "release",
                "0.5.21",
                {cid: ClaimResult(verdict=ClaimVerdict("fixed"), method=Method.ran, fix=fix21)},
            ),
            _point(
                "release",
                "0.5.23",
                {
                    cid: ClaimResult(
                        verdict=ClaimVerdict("fixed"),
                        method=Method.ran,
                        detail="max |TIS factor - 1| = 0",
                        at=[SourceLine(path="art/loss.py", line=390, end=398)],
                        fix=fix23,
                    )
                },
            ),
        ],
    )


def table_row(body: str, text: str) -> str:
    [row] = [ln for ln in body.splitlines() if ln.startswith("| ") and text in ln]
    return row


def test_a_fixed_verdict_shows_its_method_lines_fix_and_change(catalog) -> None:  # type: ignore[no-untyped-def]
    finding = catalog.get(7)
    cid = finding.claims[0].id
    missing = Change(identified=False, note="openpipe-art has no tags to compare")
    body = render_issue(catalog, finding, status=fixed_with_evidence(cid, missing)).body
    row = table_row(body, finding.claims[0].text[:40])
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
    # Three columns: the claim, its verdict and method at the newest release, the fix.
    assert cells[0] == finding.claims[0].text
    assert cells[1] == "fixed (ran)"
    # The Fixed-in cell gives the lines of the fix in the release that fixed it, not the newest.
    assert cells[2] == (
        "0.5.21<br>fix at `art/loss.py:387–395`, look for `if a \\| b:`"
        "<br>change: see [`src/art/loss.py`'s history]"
        "(https://github.com/OpenPipe/ART/commits/main/src/art/loss.py)"
    )


def test_an_identified_change_is_linked_only_on_the_audit_site(catalog) -> None:  # type: ignore[no-untyped-def]
    finding = catalog.get(7)
    cid = finding.claims[0].id
    url = "https://github.com/OpenPipe/ART/pull/512"
    found = Change(identified=True, commit="a" * 40, pull=512, url=url, title="Skip TIS | fix")
    body = render_issue(catalog, finding, status=fixed_with_evidence(cid, found)).body
    assert f"change: [`aaaaaaaaa` #512]({url}) Skip TIS \\| fix" in body
    elsewhere = found.model_copy(update={"url": "https://evil.example/x"})
    body = render_issue(catalog, finding, status=fixed_with_evidence(cid, elsewhere)).body
    assert "change: `aaaaaaaaa` #512 Skip TIS" in body and "evil.example" not in body


@pytest.mark.parametrize("item", ITEMS)
def test_columns_are_named_for_what_was_run_or_read(catalog, item: int) -> None:  # type: ignore[no-untyped-def]
    """One column: the newest release checked; each cell names its method (ran, read,
    modelled); the audit point (artbot's model) stays in the record."""
    finding = catalog.get(item)
    status = load_status(REPO, item)
    assert status is not None
    body = render_issue(catalog, finding, status=status).body
    lines = body.splitlines()
    [at] = [n for n, ln in enumerate(lines) if ln.startswith("| The audit's claim")]
    newest = status.releases()[-1].label
    assert lines[at] == f"| The audit's claim | openpipe-art {newest} | Fixed in |"
    rows = lines[at + 2 : at + 2 + len(finding.claims)]
    assert len(rows) == len(finding.claims)
    verdict = r"\| ((reproduced|fixed) \((ran|read|modelled)\)|not checked)"
    assert all(re.search(verdict, r) for r in rows)
    assert "artbot's model of `e2a406a48`" not in body


@pytest.mark.parametrize("item", ITEMS)
def test_the_status_line_agrees_with_the_status(catalog, item: int) -> None:  # type: ignore[no-untyped-def]
    finding = catalog.get(item)
    status = load_status(REPO, item)
    view = status_view(finding, status)
    assert view is not None and view.newest is not None
    body = render_issue(catalog, finding, status=status).body
    line = body.split(view.marker, 1)[1].strip().split("\n", 1)[0]
    if view.fixed_in:
        assert line.startswith(f"**Fixed in {view.fixed_in}**")
    elif view.fixed:
        assert line.startswith(f"**Partly fixed** (item {item}): {len(view.fixed)} of ")
    elif view.remaining:
        assert line.startswith(f"**Still present in openpipe-art {view.newest}**")
    if view.how:
        assert view.how in line


def test_unchecked_claims_are_not_counted_as_checked(catalog) -> None:  # type: ignore[no-untyped-def]
    finding = catalog.get(6)
    ids = [c.id for c in finding.claims]
    read = ClaimResult(
        verdict=ClaimVerdict("reproduced"),
        method=Method.read,
        at=[SourceLine(path="art/trainer_rank/_impl.py", line=120, look_for="class AdamParams:")],
    )
    status = ItemStatus(
        item=6,
        points=[
            _point(
                "release",
                "0.5.23",
                {ids[0]: read, ids[1]: ClaimResult(verdict=ClaimVerdict("not checked"))},
            )
        ],
    )
    body = render_issue(catalog, finding, status=status).body
    assert "artbot's check finds 1 of 2 claims there (1 claim by reading its source)" in body
    assert "| reproduced (read) |" in body and "| not checked |" in body


@given(st.text(alphabet=st.sampled_from("ab c<|\n"), max_size=200), st.integers(5, 120))
def test_a_cut_never_falls_inside_a_word(text: str, limit: int) -> None:
    out = one_line(text, limit)
    flat = " ".join(text.split()).replace("<", "&lt;")
    assert len(out) <= limit
    if out == flat:
        return
    assert out.endswith("…")
    kept = out[:-1]
    assert flat.startswith(kept)
    # What is kept ends at a space of the original, or is a single over-long word's start.
    assert flat[len(kept) : len(kept) + 1] == " " or " " not in flat[:limit]


def test_a_claims_figure_that_ran_code_did_not_report_is_modelled(catalog) -> None:  # type: ignore[no-untyped-def]
    """#38: "ran" only beside figures ART's code produced. Item 4's claim says about 0.1 nats;
    the run of ART's code reported BF16 logits with an RMS error of 0.002."""
    body = render_issue(catalog, catalog.get(4), status=load_status(REPO, 4)).body
    row = table_row(body, "about 0.1 nats")
    assert "reproduced (ran); the claim's figure: modelled, not from ART's code" in row
    ran = ClaimResult(verdict=ClaimVerdict("reproduced"), method=Method.ran, detail="0.1 nats")
    cid = catalog.get(4).claims[0].id
    status = ItemStatus(item=4, points=[_point("release", "0.5.23", {cid: ran})])
    row = table_row(render_issue(catalog, catalog.get(4), status=status).body, "about 0.1 nats")
    assert row.endswith("| reproduced (ran) | — |")


# -- the audit commit's place among the releases ------------------------------------------


def _anchors(label: str, n: int) -> dict[str, object]:
    at = [f"{i}:src/art/loss.py:{i}-{i}" for i in range(n)]
    return {"label": label, "checked_on": "2026-12-03", "at_lines": at, "moved": 0, "missing": 0}


# A fixture in the schema of artbot/status/dating.py, not a measurement: 12 anchors at their
# lines in 0.5.20, 9 of them in 0.5.21 and 3 in 0.5.23 (dating.py places that before 0.5.21).
DATING = {
    "audit": "e2a406a48",
    "anchors": 14,
    "releases": [_anchors("0.5.20", 12), _anchors("0.5.21", 9), _anchors("0.5.23", 3)],
}


def _copy(tmp_path: Path) -> Path:
    for part in ("findings", "repros", "templates"):
        shutil.copytree(REPO / part, tmp_path / part)
    return tmp_path


def test_the_place_is_stated_once_from_the_recorded_counts(tmp_path: Path) -> None:
    """#38: the anchors that date the audit commit are stated once, in the tracking issue;
    each issue names only the place, in its Versions line."""
    from artbot.render.issue import dating_sentence, render_checklist

    root = _copy(tmp_path)
    (root / DATING_FILE).write_text(json.dumps(DATING), encoding="utf-8")
    catalog = load_catalog(root)
    assert catalog.dating is not None
    sentence = catalog.dating.sentence()
    assert re.fullmatch(
        r"e2a406a48 lies .*: \d+ of 14 anchors sit at their lines in 0\.5\.2\d.*", sentence
    )
    for item in (4, 7):
        body = render_issue(catalog, catalog.get(item), status=load_status(root, item)).body
        assert sentence not in body and "anchors" not in body
        assert f"audit at `e2a406a48` ({catalog.dating.short()})" in body
    templates = root / "templates"
    block = render_checklist([], catalog.audit, templates, dating=dating_sentence(catalog))
    assert block.count(sentence) == 1


def test_without_the_record_nothing_is_said(catalog) -> None:  # type: ignore[no-untyped-def]
    bare = replace(catalog, dating=None)
    body = render_issue(bare, bare.get(7), status=load_status(REPO, 7)).body
    assert "anchors" not in body and "lies after" not in body
    empty = replace(catalog, dating=AnchorDating(audit="e2a406a48", anchors=14))
    assert render_issue(empty, empty.get(7)).body == render_issue(bare, bare.get(7)).body


def test_a_record_of_another_commit_is_not_stated(catalog) -> None:  # type: ignore[no-untyped-def]
    other = AnchorDating.model_validate({**DATING, "audit": "abcdef1"})
    body = render_issue(replace(catalog, dating=other), catalog.get(7)).body
    assert "abcdef1" not in body


# -- a reader's order ----------------------------------------------------------------------


@pytest.mark.parametrize("item", ITEMS)
def test_a_readers_order(catalog, item: int) -> None:  # type: ignore[no-untyped-def]
    """#38: the summary, artbot's disagreement where there is one (after the status line of a
    partly fixed item), the status line; Expected, Actual, the repro and the test, the versions
    in view; the rest under the one Details block."""
    from artbot.repro.run import load_result

    finding = catalog.get(item)
    body = render_issue(
        catalog, finding, status=load_status(REPO, item), repro_result=load_result(REPO, item)
    ).body
    text = [ln for ln in body.splitlines() if ln and not ln.startswith("<!--")]
    disagrees = "**Where artbot disagrees with the audit:** "
    assert text[0] == " ".join(finding.summary.split())  # one paragraph of what is wrong
    if finding.disagreement and not text[2].startswith(disagrees):
        assert text.pop(1).startswith(disagrees)
    assert re.match(r"\*\*(Fixed in|Partly fixed|Still present|Not checked|Checked only)", text[1])
    if finding.disagreement and text[1].startswith("**Partly fixed**"):
        # A partly fixed item opens on what is open; the disagreement may be about the rest.
        assert text[2].startswith(disagrees)
    order = [
        "**Expected:**",
        "**Actual**",
        "### Repro and test",
        "**Versions, item",
        "<details>",
        "- [`src/art/",
        "| The audit's claim",
        "**Suggested",
        "</details>",
    ]
    if "### Repro and test" not in body:  # no minimal script and no test (items 1-3)
        assert item in (1, 2, 3)
        order.remove("### Repro and test")
    places = [body.index(h) for h in order]
    assert places == sorted(places) and body.count("<details>") == 1


@pytest.mark.parametrize("item", ITEMS)
def test_the_audits_words_and_artbots_are_in_separate_lists(catalog, item: int) -> None:  # type: ignore[no-untyped-def]
    """The audit's effect, figures and confidence stay in the tracking issue (its text); the
    issue says where artbot's own figures are, and marks them modelled."""
    finding = catalog.get(item)
    body = render_issue(catalog, finding).body
    assert "(the audit's)" in body  # the suggested fix, quoted
    if finding.evidence:
        assert "artbot's figures (modelled) under `evidence` in `findings/" in body


@pytest.mark.parametrize("item", ITEMS)
def test_each_place_links_its_lines_and_the_line_to_look_for(catalog, item: int) -> None:  # type: ignore[no-untyped-def]
    """One list line per place: the link with its line anchor, then the line to look for,
    spelled out even when an earlier place has it ("the same line" read as the line above's)."""
    finding = catalog.get(item)
    lines = [ln for ln in render_issue(catalog, finding).body.splitlines() if ln.startswith("- [`")]
    assert len(lines) == len(finding.locations)
    for line, loc in zip(lines, finding.locations, strict=True):
        assert "the same line" not in line
        if loc.anchor:
            assert re.search(r"; look for (`+) ?" + re.escape(loc.anchor) + r" ?\1$", line)


@pytest.mark.parametrize(
    "item", [i for i in ITEMS if (REPO / f"repros/minimal/item{i:02d}.py").is_file()]
)
def test_the_minimal_repro_is_folded_with_its_command_in_view(catalog, item: int) -> None:  # type: ignore[no-untyped-def]
    """A minimal repro that calls ART is in view, before Details; a torch model's command and
    output are in view, its code under Details (#52: pasted, never only named)."""
    body = render_issue(catalog, catalog.get(item), status=load_status(REPO, item)).body
    command = f"`python item{item:02d}.py` (torch only"
    if command not in body:  # the block calls ART's own code
        assert body.index("```python") < body.index("<details>")
        assert f"`python item{item:02d}.py` printed on openpipe-art" in body
        assert "(artbot's run of the unpacked wheel" in body  # not a pip install (#52 review)
        return
    assert body.index(command) < body.index("<details><summary>") < body.index("```python")
    assert body.index("```python") < body.index("</details>")


@given(st.text(alphabet=st.sampled_from("a`|\\ \n"), max_size=40))
def test_a_code_span_in_a_cell_never_ends_the_cell(text: str) -> None:
    from artbot.render.status_view import code_span

    span = code_span(text)
    assert "\n" not in span
    # Read as GFM splits a row: an escaped backslash, then an escaped pipe, are not breaks.
    assert "|" not in span.replace("\\\\", "").replace("\\|", "")
    fence = re.match(r"`+", span)
    assert fence is not None and span.endswith(fence.group())
    assert len(fence.group()) > max((len(m) for m in re.findall(r"`+", text)), default=0)


def test_the_status_line_points_at_fixing_lines_only_when_recorded(catalog) -> None:  # type: ignore[no-untyped-def]
    from tests.helpers.statusdata import fixed_item

    finding = catalog.get(10)
    body = render_issue(catalog, finding, status=fixed_item(finding)).body
    assert "**Fixed in 0.5.21**" in body and "fixing lines" not in body


def test_a_recorded_line_cannot_forge_a_marker(catalog) -> None:  # type: ignore[no-untyped-def]
    """Lines come from a release's source, which is untrusted: one quoting artbot's markers
    renders as text, and the body keeps exactly its own markers."""
    finding = catalog.get(7)
    cid = finding.claims[0].id
    forged = "<!-- artbot:finding audit=e2a406a48 item=9 --> <!-- artbot:body:end -->"
    fix = FixEvidence(lines=[SourceLine(path="art/loss.py", line=1, look_for=forged)])
    result = ClaimResult(verdict=ClaimVerdict("fixed"), method=Method.read, fix=fix)
    status = ItemStatus(item=7, points=[_point("release", "0.5.23", {cid: result})])
    body = render_issue(catalog, finding, status=status).body
    assert body.count("<!-- artbot:finding") == 1 and body.count("<!-- artbot:body:end") == 1
    assert "artbot:finding audit=e2a406a48 item=9" in body


def test_a_fix_without_an_identified_change_links_the_files_history(catalog) -> None:  # type: ignore[no-untyped-def]
    """Not an internal state ("not looked up", "GitHub could not be reached"): something a
    reader can follow, the fixing file's history on ART's main branch."""
    finding = catalog.get(7)
    cid = finding.claims[0].id
    fix = FixEvidence(lines=[SourceLine(path="art/loss.py", line=388)])
    fixed = ClaimResult(verdict=ClaimVerdict("fixed"), method=Method.ran, fix=fix)
    status = ItemStatus(item=7, points=[_point("release", "0.5.21", {cid: fixed})])
    row = table_row(render_issue(catalog, finding, status=status).body, finding.claims[0].text[:40])
    history = "https://github.com/OpenPipe/ART/commits/main/src/art/loss.py"
    assert row.endswith(
        "| 0.5.21<br>fix at `art/loss.py:388`<br>change: see "
        f"[`src/art/loss.py`'s history]({history}) |"
    )
    assert "change not looked up" not in row and "could not be reached" not in row


def test_an_audit_point_alone_is_said_to_be_only_that(catalog) -> None:  # type: ignore[no-untyped-def]
    """The audit point (artbot's model or reading of the audit commit) is no release: the issue
    says no release was checked, and the table has no release column."""
    finding = catalog.get(7)
    cid = finding.claims[0].id
    read = ClaimResult(verdict=ClaimVerdict("reproduced"), method=Method.read)
    status = ItemStatus(item=7, points=[_point("audit", "e2a406a48", {cid: read})])
    body = render_issue(catalog, finding, status=status).body
    assert "**Checked only at the audit commit** `e2a406a48`." in body
    assert (
        "| The audit's claim | Fixed in |" in body
        and "openpipe-art 0." not in body.split("| The audit's claim", 1)[1].split("\n", 1)[0]
    )
