"""The screen's bookkeeping (tests/screen_controls.py, a benchmark run by hand): which seeds a
check's tape decides, what is sent again, and that it screens every adversarial control CI runs.
Pure: no check runs here."""

from __future__ import annotations

from typing import Any

from artbot.records.catalog import load_catalog
from artbot.verify.code import checkable
from tests.helpers.controls import ADVERSARIAL, ROOT, load_adversarial
from tests.helpers.screen import Control, Screened, controls, report, settle


class Failure:
    def __init__(self, measured: Any) -> None:
        self.measured, self.bound = measured, "ok"


def judged(case: Any, raw: Any) -> Failure | None:
    return None if raw == "ok" else Failure(raw)


QUEUE = [(-1, {"e": 1}), (-1, {"e": 2}), (0, {"a": 1}), (0, {"a": 2}), (1, {"b": 1}), (1, {"b": 2})]


def tape(*raws: str, extra: int = 0) -> list[dict[str, Any]]:
    """The queue's first cases measured with ``raws``, then ``extra`` shrinking entries."""
    out = [{"case": case, "raw": raw} for (_, case), raw in zip(QUEUE, raws, strict=False)]
    return out + [{"case": {"shrunk": n}, "raw": "bad"} for n in range(extra)]


def test_a_whole_passing_tape_leaves_nothing() -> None:
    assert settle(QUEUE, tape(*["ok"] * 6), judged) == ([], 6, None)


def test_a_draws_failure_decides_its_seed_only_and_drops_its_other_draws() -> None:
    rest, measured, failed = settle(QUEUE, tape("ok", "ok", "bad", extra=3), judged)
    assert (rest, measured) == (QUEUE[4:], 3)
    assert failed is not None and failed[0] == 0 and '{"a": 1}' in failed[1]


def test_an_edges_failure_decides_every_seed() -> None:
    rest, measured, failed = settle(QUEUE, tape("ok", "bad"), judged)
    assert (rest, measured) == ([], 2)
    assert failed is not None and failed[0] == -1


def test_cases_past_a_capped_tape_are_sent_again() -> None:
    assert settle(QUEUE, tape("ok", "ok", "ok"), judged) == (QUEUE[3:], 3, None)
    assert settle(QUEUE, [], judged) == (QUEUE, 0, None)


def test_report_names_the_first_disagreeing_seed_and_what_failed() -> None:
    fix = Control("real", "item02_real_x", "0.5.23", 2, (), {"c": "fixed"})
    found = Screened([10, 11, 12], verdicts=[{"c": "fixed"}] + [{"c": "reproduced"}] * 2)
    found.failing[("c", 1)] = '{"x": 1}: measured 3, bound 2'
    line = report(fix, found, lambda seed: f"seen too on {seed}")
    assert line.split()[:2] == ["3", "2"], line
    assert 'seed 11: c reproduced on {"x": 1}: measured 3' in line, line
    assert "[CI's path: seen too on 11]" in line, line
    unfix = Control("unfix", "item02.toml", "0.5.23", 2, (), None)
    assert unfix.agrees({"c": "reproduced", "d": "fixed"}) and not unfix.agrees({"c": "fixed"})


def test_every_adversarial_control_ci_runs_is_screened() -> None:
    catalog = load_catalog(ROOT)
    items = [f.item for f in checkable(catalog)]
    kinds = ["real", "harmless", "fake", "half"]

    def unused(item: int, version: str) -> dict[str, str]:
        raise AssertionError("only the fix and unfix need the release's own verdicts")

    screened = {
        (c.name, c.version)
        for c in controls(catalog, items, ["0.5.20", "0.5.21", "0.5.23"], kinds, unused)
    }
    for path in sorted(ADVERSARIAL.glob("*.toml")):
        for version in load_adversarial(path).releases:
            assert (path.stem, version) in screened, (path.stem, version)
