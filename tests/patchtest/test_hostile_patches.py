"""#53: a hostile patch (or request) attacks `/artbot test`, and each attack, run for real
through the trial or the responder, holds."""

from __future__ import annotations

import re

import pytest

from artbot.patchtest.answer import render_trial
from artbot.verify.code import CodeStatus
from tests.helpers.patchdiff import RELEASE, make_diff
from tests.helpers.wheels import default_wheels
from tests.patchtest.test_answer import live
from tests.patchtest.test_trial import trial

pytestmark = pytest.mark.network

LINKS = "see https://evil.example/x www.evil.example #12 octo/repo#3 @someone"
LIVE = re.compile(r"https?://|www\.|#\d|@\w")


def test_links_and_references_a_patch_writes_are_dead_in_the_answer() -> None:
    """Attack 9: the answer kept bare URLs, ``www.`` addresses and ``#N`` / ``owner/repo#N``
    references live; now every text of the patch's is in a code span."""
    source = (default_wheels().package(RELEASE) / "loss.py").read_text(encoding="utf-8")
    head, sep, rest = source.partition("\nclass ")
    hostile = f"{head}\nraise RuntimeError({LINKS!r})\n{sep}{rest}"
    got = trial(801, make_diff("src/art/loss.py", source, hostile))
    assert got.after.status is CodeStatus.could_not_run and "evil.example" in got.after.detail
    answer = render_trial(got)
    assert "evil.example" in answer  # shown, quoted
    assert not LIVE.search(live(answer)), live(answer)
