"""What an issue states about its finding's status, and the filing decision: pure."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from artbot.records.catalog import load_catalog
from artbot.render.status_view import cell_text, stated_in_comments, stated_status, status_view
from artbot.status import ItemStatus
from tests.helpers.golden import render_issue
from tests.helpers.statusdata import (
    F,
    N,
    R,
    fixed_item,
    partial_item,
    point,
    reproduced_item,
    with_claims,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def catalog():  # type: ignore[no-untyped-def]
    return load_catalog(ROOT)


def test_a_fully_fixed_item_is_filed_closed_naming_the_release(catalog) -> None:  # type: ignore[no-untyped-def]
    finding = with_claims(catalog.get(7))
    view = status_view(finding, fixed_item(finding))
    assert view is not None
    assert (view.filing, view.fixed_in, view.newest) == ("closed", "0.5.21", "0.5.23")
    assert view.title is None  # the finding's own title


def test_a_partial_item_is_open_and_titled_by_what_remains(catalog) -> None:  # type: ignore[no-untyped-def]
    finding = with_claims(catalog.get(9))
    view = status_view(finding, partial_item(finding))
    assert view is not None
    [remaining] = view.remaining
    symptom = next(c.symptom for c in finding.claims if c.id == remaining.claim)
    assert (view.filing, view.fixed_in, view.title) == ("open", None, symptom)
    assert [r.fixed_in for r in view.fixed] == ["0.5.21"] * len(view.fixed)


def test_an_unchecked_claim_keeps_the_issue_open(catalog) -> None:  # type: ignore[no-untyped-def]
    finding = with_claims(catalog.get(9))
    ids = [c.id for c in finding.claims]
    verdicts = {ids[0]: F, **{cid: N for cid in ids[1:]}}
    status = ItemStatus(
        item=9,
        points=[
            point("audit", "e2a406a48", dict.fromkeys(ids, R)),
            point("release", "0.5.23", verdicts),
        ],
    )
    view = status_view(finding, status)
    assert view is not None
    assert view.filing == "open" and view.fixed_in is None
    assert [r.claim for r in view.unchecked] == ids[1:]


def test_a_claim_that_regressed_is_not_fixed(catalog) -> None:  # type: ignore[no-untyped-def]
    finding = with_claims(catalog.get(7))
    ids = [c.id for c in finding.claims]
    status = ItemStatus(
        item=7,
        points=[*fixed_item(finding).points, point("release", "0.5.24", dict.fromkeys(ids, R))],
    )
    view = status_view(finding, status)
    assert view is not None and view.filing == "open" and view.fixed_in is None
    assert view.newest == "0.5.24" and [r.claim for r in view.remaining] == ids


def test_render_states_the_status_in_one_line_after_what_is_wrong(catalog) -> None:  # type: ignore[no-untyped-def]
    """#22.6, #38: the summary first, then the status in one line; the claim table under
    Details, after the places in the code."""
    finding = with_claims(catalog.get(7))
    body = render_issue(catalog, finding, tracking_issue=1111, status=fixed_item(finding)).body
    summary, status = [ln for ln in body.splitlines() if ln and not ln.startswith("<!--")][:2]
    assert summary == " ".join(finding.summary.split())
    assert status.startswith("**Fixed in 0.5.21**")
    assert (
        body.index("Fixed in 0.5.21")
        < body.index("**Expected:**")
        < body.index("<details>")
        < body.index("- [`src/art/")
        < body.index("| The audit's claim")
        < body.index("</details>")
    )


def test_render_of_a_reproduced_item_names_the_newest_release(catalog) -> None:  # type: ignore[no-untyped-def]
    finding = catalog.get(6)
    status = reproduced_item(finding)
    body = render_issue(catalog, finding, status=status).body
    assert "**Still present in openpipe-art 0.5.23**, the newest release checked" in body


def test_no_status_renders_as_before(catalog) -> None:  # type: ignore[no-untyped-def]
    finding = catalog.get(7)
    assert render_issue(catalog, finding).body == render_issue(catalog, finding, status=None).body
    assert "artbot:status" not in render_issue(catalog, finding).body


def test_the_state_token_round_trips_through_the_marker(catalog) -> None:  # type: ignore[no-untyped-def]
    finding = with_claims(catalog.get(9))
    view = status_view(finding, partial_item(finding))
    assert view is not None
    assert stated_status(f"text\n{view.marker}\nmore", 9) == view.state
    assert stated_status(view.marker, 7) is None
    assert stated_in_comments(["a", view.marker, "b"], 9) == view.state


@given(st.text())
def test_cells_are_one_line_and_every_pipe_is_escaped(text: str) -> None:
    cell = cell_text(text)
    assert "\n" not in cell and "\r" not in cell and "<" not in cell
    # Read as GFM reads a cell: an escaped backslash, then an escaped pipe, are literal.
    assert "|" not in cell.replace("\\\\", "").replace("\\|", "")
    assert len(cell) <= 80 + text.count("|") + text.count("\\")


def test_the_audits_words_keep_their_pipes(catalog) -> None:  # type: ignore[no-untyped-def]
    finding = catalog.get(9)
    body = render_issue(catalog, finding, status=partial_item(finding)).body
    assert "(group == g) \\| (parent == parent(g))" in body  # in the table
    assert "fix, (group == g) | (group == parent(g))" in body  # artbot's disagreement, first


@pytest.mark.parametrize(
    ("label", "claim"),
    [("0.5.21 -->", "tis"), ("", "tis"), ("0.5.21", "Not Kebab"), ("0.5.21", "a|b")],
)
def test_labels_and_claim_ids_that_could_break_a_marker_are_refused(
    catalog, label: str, claim: str
) -> None:  # type: ignore[no-untyped-def]
    from artbot.status import StatusError

    finding = with_claims(catalog.get(7))
    status = ItemStatus(item=7, points=[point("release", label, {claim: F})])
    with pytest.raises(StatusError):
        status_view(finding, status)


_verdicts = st.sampled_from([R, F, N])


@given(st.data())
def test_the_filing_decision_never_claims_more_than_was_checked(catalog, data) -> None:  # type: ignore[no-untyped-def]
    finding = with_claims(catalog.get(9))
    ids = [c.id for c in finding.claims]
    releases = data.draw(st.lists(st.dictionaries(st.sampled_from(ids), _verdicts), max_size=4))
    points = [point("audit", "e2a406a48", dict.fromkeys(ids, R))]
    points += [point("release", f"0.5.{21 + i}", v) for i, v in enumerate(releases)]
    view = status_view(finding, ItemStatus(item=9, points=points))
    assert view is not None
    newest = points[-1].claims if releases else {}
    if view.filing == "closed":
        assert all(newest.get(cid) is not None and newest[cid].verdict is F for cid in ids)
        assert view.fixed_in is not None and not view.remaining and not view.unchecked
    assert len(view.fixed) + len(view.remaining) + len(view.unchecked) == len(ids)
    if view.title is not None:
        assert view.fixed and len(view.remaining) + len(view.unchecked) == 1
    assert stated_status(view.marker, 9) == view.state


# -- "ran" only beside what ART's code produced (#38) --------------------------------------


def test_figures_are_numbers_standing_alone() -> None:
    from artbot.render.status_view import figures

    text = "about 0.1 nats, eps 1e-8 (1e-08), 31 % at 1,024 calls; Qwen3-4B, L4857, _impl.py:4857"
    assert figures(text) == [0.1, 1e-8, 1e-8, 31.0, 1.0, 24.0]
    assert figures("openpipe-art 0.5.23, art/loss.py:388–395") == []


def test_a_claims_figure_the_run_did_not_report_is_unproduced() -> None:
    from artbot.render.status_view import unproduced, verdict_cell
    from artbot.status import ClaimResult, ClaimVerdict, Method

    claim = "The LM-head logits carry BF16 rounding, giving about 0.1 nats of noise."
    ran = "logits in bfloat16, RMS error 0.002 of their RMS; more than FP32 rounding (1e-05)"
    assert unproduced(claim, ran) == [0.1]
    assert unproduced("an eps of 1e-8", "the optimizer gets eps 1e-08") == []
    # A bare number is an input or the code's constant, not a measured figure.
    assert unproduced("the zero-variance test's absolute 1e-12 fails", "keeps 619 of 1000") == []
    assert unproduced("falls 31.1 % short, ~0.5 of it", "short by 0.311") == [31.1, 0.5]
    result = ClaimResult(verdict=ClaimVerdict("reproduced"), method=Method.ran, detail=ran)
    cell = verdict_cell(result, claim)
    assert cell.endswith("; the claim's figure: modelled, not from ART's code")
    read = result.model_copy(update={"method": Method.read})
    assert verdict_cell(read, claim) == "reproduced (read)"  # only "ran" speaks for ART's code
    assert verdict_cell(None, claim) == "not checked"
