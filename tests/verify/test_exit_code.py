"""``artbot verify``'s exit code: what CI can rely on (issue #23)."""

from __future__ import annotations

from artbot.verify.cli import exit_reasons


def test_every_check_ran_is_exit_0_whatever_was_found() -> None:
    assert exit_reasons(ran=True, remaining=[3, 6], anchors_ok=False, fail_on=()) == []


def test_a_check_that_could_not_run_always_fails() -> None:
    assert exit_reasons(ran=False, remaining=[], anchors_ok=True, fail_on=()) == [
        "a check could not run"
    ]


def test_fail_on_reproduced_fails_while_a_bug_remains() -> None:
    reasons = exit_reasons(ran=True, remaining=[3, 6], anchors_ok=True, fail_on=("reproduced",))
    assert reasons == ["--fail-on reproduced: still reproduced, in full or in part: item 3, 6"]
    assert exit_reasons(ran=True, remaining=[], anchors_ok=True, fail_on=("reproduced",)) == []


def test_fail_on_moved_fails_on_a_moved_line_only() -> None:
    assert exit_reasons(ran=True, remaining=[], anchors_ok=False, fail_on=("moved",))
    assert exit_reasons(ran=True, remaining=[], anchors_ok=True, fail_on=("moved",)) == []
