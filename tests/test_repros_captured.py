"""Each captured repro output in findings/results/ equals a fresh run of its script.

The captured text is what issue bodies quote, so a maintainer who runs the script must see the
same lines. Provenance (duration, timestamp, platform) may differ; stdout and the verdict may
not. The scripts print figures at 3 significant digits and rounding-level ones as a bound, so
the text does not depend on the CPU. Regenerate with ``artbot repro --item N``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from artbot.reprorun import run_repro  # noqa: E402

pytestmark = pytest.mark.repro

ROOT = Path(__file__).resolve().parents[1]
CAPTURED = sorted((ROOT / "findings" / "results").glob("*.json"))


def test_every_item_has_a_captured_output() -> None:
    assert len(CAPTURED) == len(list((ROOT / "findings").glob("[0-9][0-9]-*.yaml")))


@pytest.mark.parametrize("path", CAPTURED, ids=lambda p: p.stem)
def test_captured_output_equals_a_fresh_run(path: Path) -> None:
    captured = json.loads(path.read_text(encoding="utf-8"))
    fresh = run_repro(ROOT, captured["item"], captured["script"], timeout_s=60)
    assert fresh.status == "ok", fresh.stderr
    assert fresh.stdout.splitlines() == captured["stdout"].splitlines(), (
        f"{path.name} is stale: run `artbot repro --item {captured['item']}`"
    )
    assert fresh.verdict == captured["verdict"]
