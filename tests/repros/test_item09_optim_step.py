"""Item 9's second claim, one optimizer step per packed row, read from ART's own tinker/service.py
(AST of TinkerService.train) in the cached wheels: still there in 0.5.20 and 0.5.21."""

from __future__ import annotations

from pathlib import Path

import pytest

from artbot.repro.scripts import import_script
from tests.helpers.wheels import default_wheels

pytestmark = pytest.mark.network

ROOT = Path(__file__).resolve().parents[2]


def _service(version: str) -> str:
    return (default_wheels().package(version) / "tinker" / "service.py").read_text("utf-8")


@pytest.mark.parametrize("version", ["0.5.20", "0.5.21", "0.5.23"])
def test_optim_step_inside_the_per_row_loop(version: str) -> None:
    m = import_script(next((ROOT / "repros").glob("item09_*.py")))
    assert m.optim_step_per_row(_service(version)) is True


def test_the_check_can_say_fixed() -> None:
    m = import_script(next((ROOT / "repros").glob("item09_*.py")))
    fixed = (
        "class TinkerService:\n"
        "    async def train(self, rows):\n"
        "        for row in rows:\n"
        "            await self.client.forward_backward_async(row)\n"
        "        await self.client.optim_step_async(1)\n"
    )
    assert m.optim_step_per_row(fixed) is False
    assert m.optim_step_per_row("class Other: pass\n") is None
