"""#54: the tracking issue found when none is configured (artbot.tracking.discover): by its
label, else by its text (the audit's commit and its checklist), never a finding's issue, a pull
request or an issue that merely mentions the commit; none or several is one line naming how to
configure it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from artbot.errors import BadInput
from artbot.records.catalog import load_catalog
from artbot.records.marker import BODY_END, BODY_START, IssueMarker
from artbot.records.observed import ObservedIssue
from artbot.tracking.checklist import START_MARKER
from artbot.tracking.discover import find_tracking, holds_checklist
from artbot.tracking.ownership import seed_title

REPO = Path(__file__).resolve().parents[2]
CATALOG = load_catalog(REPO)
AUDIT = CATALOG.audit
SEED = seed_title(REPO)
SEED_BODY = (REPO / "findings" / "tracking-issue.md").read_text(encoding="utf-8").partition("\n")[2]


def issue(number: int, body: str, title: str = "an issue", **extra: Any) -> ObservedIssue:
    return ObservedIssue.from_json({"number": number, "title": title, "body": body, **extra})


def test_the_seed_and_a_block_holding_issue_are_the_tracking_issue() -> None:
    assert holds_checklist(issue(1, SEED_BODY, "Numerics audit"), AUDIT, SEED)
    block = f"Audit of ART at {AUDIT.commit}.\n\n{START_MARKER}\n- [ ] 4. ...\n"
    assert holds_checklist(issue(2, block), AUDIT, None)


@pytest.mark.parametrize(
    "body",
    [
        "We saw NaNs after e2a406a48; any idea?",  # names the commit, holds no checklist
        "Dedicated issues\n\n- #1108\n",  # a list, but not of this audit
    ],
)
def test_an_issue_that_only_mentions_the_commit_or_a_list_is_not_it(body: str) -> None:
    assert not holds_checklist(issue(3, body), AUDIT, None)


def test_a_findings_issue_or_a_pull_request_quoting_the_seed_is_not_it() -> None:
    marker = IssueMarker(AUDIT.commit, 7)
    quoted = f"{SEED_BODY}\n{BODY_START}\n{marker}\n{BODY_END}\n"
    assert not holds_checklist(issue(4, quoted), AUDIT, SEED)
    assert not holds_checklist(issue(5, SEED_BODY, pull_request={}), AUDIT, SEED)


def test_found_by_label_first_then_by_text_read_only_when_needed() -> None:
    label = AUDIT.tracking_label
    assert label
    labelled = issue(9, "no text of the audit", labels=[{"name": label}])

    def never() -> Any:
        raise AssertionError("the open issues were listed although the label decided")
        yield

    assert find_tracking([labelled], never(), AUDIT, SEED) == 9
    found = find_tracking([], iter([issue(3, "hi"), issue(11, SEED_BODY)]), AUDIT, SEED)
    assert found == 11


def test_none_or_several_is_one_line_naming_both_ways_to_configure_it() -> None:
    with pytest.raises(BadInput) as none:
        find_tracking([], iter([issue(3, "hi")]), AUDIT, SEED)
    with pytest.raises(BadInput) as several:
        find_tracking([], iter([issue(3, SEED_BODY), issue(8, SEED_BODY)]), AUDIT, SEED)
    for error in (none, several):
        text = str(error.value)
        assert "\n" not in text and "--tracking-issue" in text and "ARTBOT_TRACKING_ISSUE" in text
        assert "nothing was filed" in text
    assert "(#3, #8)" in str(several.value)
