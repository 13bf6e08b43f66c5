"""The confined checks forked from a warm interpreter (artbot.verify.zygote): a check sees what
a check started afresh sees and nothing of the zygote's (no descriptor, no variable but its
own), it is capped and confined the same way, it is killed on the wall clock, and where the
zygote cannot serve, the check runs as before with the same result.

Each test gives ``verify`` a crafted tree whose ``art/loss.py`` reports what it finds at
import (item 7's check imports it), through the error the check then records.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from artbot.verify import zygote
from artbot.verify.code import CodeResult, CodeStatus
from artbot.verify.limits import Limits
from tests.helpers.confine import ENV, confined_here, run_apart, tree_with

pytestmark = [pytest.mark.e2e, pytest.mark.repro]

REPORTER = """
import json, os, sys
fds = sorted(int(n) for n in os.listdir("/proc/self/fd"))
report = {
    "fds": fds,
    "env": sorted(os.environ),
    "home": os.environ.get("HOME"),
    "cwd": os.getcwd(),
    "pid": os.getpid(),
    "uid": os.getuid(),
    "warm": "_pytest" in sys.modules,  # the zygote imports pytest; a code check does not
    "art_in_path": [p for p in sys.path if p.endswith("unpacked")],
}
raise RuntimeError("seen " + json.dumps(report, sort_keys=True))
"""


def seen(result: CodeResult) -> dict[str, Any]:
    found = json.JSONDecoder().raw_decode(result.detail.split("seen ", 1)[1])[0]
    assert isinstance(found, dict)
    return found


def test_a_forked_check_sees_what_a_check_started_afresh_sees(
    place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    zygote.close_all()
    [result], said = run_apart(place, tree_with(place, REPORTER))
    confined_here(said)
    forked = seen(result)
    with monkeypatch.context() as patch:
        patch.setattr(zygote, "zygote_for", lambda python, env: None)
        [result], said = run_apart(place, tree_with(place, REPORTER))
    afresh = seen(result)
    assert forked.pop("warm") is True and afresh.pop("warm") is False
    # Its scratch folder differs from run to run; everything else is the same.
    for report in (forked, afresh):
        assert report.pop("home") == report.pop("cwd")
    assert forked == afresh
    # stdin, stdout, stderr, the listing itself and the pipe for its results (numbered 100
    # or above, #53): no socket, no report descriptor
    assert forked["fds"][:4] == [0, 1, 2, 3] and len(forked["fds"]) == 5, forked
    assert forked["fds"][4] >= 100
    assert forked["pid"] == 1 and forked["uid"] == 0  # its own PID and user namespaces
    names = set(forked["env"])
    assert names <= {*ENV, "HOME", "TMPDIR", "PYTHONIOENCODING", "LC_CTYPE"}, names


def test_a_forked_check_is_killed_on_the_wall_clock_and_the_next_one_runs(place: Path) -> None:
    [result], said = run_apart(place, tree_with(place, "while True:\n    pass\n"), Limits(), 2)
    confined_here(said)
    assert result.status is CodeStatus.could_not_run
    assert result.detail.startswith("the check process ran over 2 s (the wall clock)"), result
    [after], _ = run_apart(place, tree_with(place, REPORTER))
    assert seen(after)["warm"] is True  # the same zygote serves the next check


def test_a_zygote_that_has_gone_is_replaced_and_no_check_is_lost(place: Path) -> None:
    [first], said = run_apart(place, tree_with(place, REPORTER))
    confined_here(said)
    for known in list(zygote._ZYGOTES.values()):
        assert known is not None
        known.proc.kill()
        known.proc.wait()
    [second], _ = run_apart(place, tree_with(place, REPORTER))
    assert seen(second)["warm"] is False  # the check ran afresh: not lost, not run twice
    assert seen(second)["fds"] == seen(first)["fds"]
    [third], _ = run_apart(place, tree_with(place, REPORTER))
    assert seen(third)["warm"] is True  # and a new zygote serves the next


def test_a_zygote_that_cannot_start_leaves_the_check_as_before(
    place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    zygote.close_all()

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("no socket here")

    monkeypatch.setattr(zygote.Zygote, "__init__", refuse)
    [result], said = run_apart(place, tree_with(place, REPORTER))
    confined_here(said)
    assert seen(result)["warm"] is False
    zygote.close_all()


def test_only_python_dash_m_of_this_interpreter_is_forked() -> None:
    spec = zygote.Spec(scratch="/nonexistent")
    for argv in (["/bin/true"], ["python3", "-m", "x"], [sys.executable, "-c", "pass"]):
        assert zygote.run(spec, zygote.Check(argv, b"", {}, "/", 1)) is None
