"""What a check costs per claim (issue #50's budget: at most 3 s a claim on the project's
2-core machine): a benchmark, printed, never asserted (timed tests are flaky).

``python -m tests.check_time 7 8 801 --release 0.5.20 --release 0.5.23`` runs each item's
``check_art`` (as ``artbot verify code`` does, in this process) on each release as shipped and
on the release with the item's control applied (``repros/controls/itemNN.toml``: the fix where a
claim is reproduced, the unfix where none is), so both a search that stops at a counterexample
and one that runs the whole domain are timed. It prints wall and CPU seconds per claim: on a
loaded machine the wall time is the machine's, the CPU time the check's. The first check of a
run also pays for importing torch's and ART's modules.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from artbot.records.catalog import load_catalog
from artbot.verify.code import run_check
from artbot.verify.tree import open_tree
from tests.helpers.controls import ROOT, controlled_copy, load_control
from tests.helpers.wheels import RELEASES, default_wheels

TARGET_S = 3.0  # a claim's budget (issue #50)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("items", nargs="+", type=int)
    parser.add_argument("--release", action="append", choices=RELEASES)
    args = parser.parse_args(argv)
    catalog = load_catalog(ROOT)
    wheels = default_wheels()
    scratch = Path(tempfile.mkdtemp(prefix="artbot-check-time-"))
    print(f"{'release':8} {'item':>5} {'tree':8} {'wall s':>7} {'cpu s':>6} {'/claim':>7} verdicts")
    for version in args.release or list(RELEASES):
        shipped = wheels.tree(version)
        for item in args.items:
            finding = next(f for f in catalog.findings if f.item == item)
            trees = [("shipped", shipped)]
            control = load_control(item)
            for kind in ("fix", "unfix"):
                edits = control.edits(kind, version) if control is not None else []
                if edits:
                    folder = scratch / f"{version}-{item}-{kind}"
                    trees.append((kind, controlled_copy(shipped, folder, edits)))
            for kind, root in trees:
                wall, cpu = time.perf_counter(), time.process_time()
                result = run_check(catalog, open_tree(root, catalog.audit, label=version), finding)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                claims = max(1, len(result.claims))
                verdicts = ", ".join(
                    f"{cid} {c.verdict.value} ({c.domain.inputs if c.domain else '-'} inputs)"
                    for cid, c in result.claims.items()
                )
                over = " over 3 s" if wall / claims > TARGET_S else ""
                print(
                    f"{version:8} {item:>5} {kind:8} {wall:7.2f} {cpu:6.2f} "
                    f"{wall / claims:7.2f} {verdicts or result.detail[:80]}{over}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
