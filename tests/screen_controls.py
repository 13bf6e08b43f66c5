"""Every control's check over many of artbot's draws: a real fix judged reproduced, or a fake
judged fixed, on some seed, is a CI run that fails by chance (and, for a user's real fix, the
worst answer artbot gives). A benchmark-style tool, printed, never asserted.

``python -m tests.screen_controls 3 10 1001 --draws-factor 10 --kind real --kind harmless``
runs, for each control of each item named (all items with random draws when none is), on each
release it applies to (``--release`` to choose), the item's ``check_art`` on the copy with the
control's edits, judged as CI judges it (``tests/helpers/controls.py`` ``check``:
``artbot/verify/rejudge.py``'s judge of each taped ``(case, raw)``). The controls: the release
as shipped (``shipped``: the verdicts recorded in ``findings/status/``), ``repros/controls/
itemNN.toml`` (``fix``: every claim fixed; ``unfix``: some claim reproduced) and every file of
``repros/controls/adversarial/`` (``real``, ``harmless``, ``fake``, ``half``: its ``[expect]``,
else the recorded verdicts).

Two modes:

- ``--seeds N``: N seeds, each a whole plan as CI draws it (``draw``), one check per seed.
- ``--draws-factor K`` (the default, K = 4): K seeds, but one check measures them all: each
  claim's plan is its edges, then each seed's ``draws`` samples (exactly what ``draw`` takes
  from ``random.Random(seed)``). A search stops at its first failure, so after one the check
  runs again on what is left (the failing seed's other samples skipped: that seed is decided),
  and a tape past the cap (``artbot/verify/limits.py``) is measured in chunks. A seed's verdict
  on a claim is reproduced when an edge or one of its samples fails, else fixed; the first
  disagreeing seed is then run again through CI's own path (``check(..., seed=...)``) and the
  line says whether that run agreed.

Each line: release, item, control kind and name, the expected verdicts, seeds screened, how many
disagree, and the first disagreeing seed with its failing case (a claim expected fixed) or the
claims judged fixed (expected reproduced). Seeds are ``--seed`` + 0, 1, ... (``--seed`` random
unless given); ``nice -n 10`` it on a shared machine. The screen itself (what is sent, what
each tape decides) is ``tests/helpers/screen.py``; ``tests/verify/test_screen_controls.py``
holds its bookkeeping.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from artbot.records.catalog import load_catalog
from artbot.verify.code import checkable
from artbot.verify.rejudge import new_seed
from tests.helpers.controls import ROOT, check, claim_verdicts, controlled_copy
from tests.helpers.screen import (
    KINDS,
    Control,
    Trouble,
    controls,
    has_draws,
    report,
    screen_draws,
    screen_seeds,
)
from tests.helpers.wheels import RELEASES, default_wheels


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("items", nargs="*", type=int)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--seeds", type=int, help="N whole plans, one check each")
    mode.add_argument("--draws-factor", type=int, default=4, help="K seeds' draws in one plan")
    parser.add_argument("--release", action="append", choices=RELEASES)
    parser.add_argument("--kind", action="append", choices=KINDS, help="(default: all, in order)")
    parser.add_argument("--name", help="only controls whose name contains this")
    parser.add_argument("--seed", type=int, help="the first seed (default: a random one)")
    args = parser.parse_args(argv)
    catalog = load_catalog(ROOT)
    drawn = [f for f in checkable(catalog) if has_draws(catalog, f)]
    items = args.items or [f.item for f in drawn]
    base = new_seed() if args.seed is None else args.seed
    count = args.seeds if args.seeds is not None else args.draws_factor
    seeds = [(base + n) % 2**63 for n in range(count)]
    mode_said = f"--seeds {count}" if args.seeds is not None else f"--draws-factor {count}"
    print(f"screen: {mode_said}, seeds {seeds[0]} + 0..{count - 1}", flush=True)
    wheels = default_wheels()

    def as_shipped(item: int, version: str) -> dict[str, str]:
        return claim_verdicts(check(catalog, wheels.tree(version), item, version, seeds[0]))

    versions, kinds = args.release or list(RELEASES), args.kind or list(KINDS)
    chosen = controls(catalog, items, versions, kinds, as_shipped, args.name or "")
    scratch = Path(tempfile.mkdtemp(prefix="artbot-screen-"))
    print(
        f"{'release':8} {'item':>5} {'kind':8} {'expected':16} {'seeds':>5} {'wrong':>5}  control"
    )
    totals = [0, 0, 0]  # controls, seeds screened, disagreeing
    for n, control in enumerate(chosen):
        finding = next(f for f in catalog.findings if f.item == control.item)
        release = wheels.tree(control.version)
        root = (
            controlled_copy(release, scratch / f"c{n}", control.edits) if control.edits else release
        )
        label = f"{control.version} + {control.name}"
        cpu = time.process_time()
        screen = screen_seeds if args.seeds is not None else screen_draws
        head = f"{control.version:8} {control.item:>5} {control.kind:8} {control.expected():16}"
        try:
            found = screen(catalog, finding, root, label, seeds)
        except Trouble as trouble:
            print(f"{head} could not run: {trouble}  {control.name}", flush=True)
            continue

        def confirm(seed: int, c: Control = control, root: Path = root, label: str = label) -> str:
            again = claim_verdicts(check(catalog, root, c.item, label, seed))
            return f"{'not seen' if c.agrees(again) else 'seen too'}: {again}"

        line = report(control, found, confirm if args.seeds is None else None)
        cpu = time.process_time() - cpu
        cost = f"{found.checks} checks, {found.inputs} inputs, {cpu:.0f} s CPU"
        print(f"{head} {line}  {control.name} ({cost})", flush=True)
        totals[0] += 1
        totals[1] += len(found.verdicts)
        totals[2] += sum(not control.agrees(v) for v in found.verdicts)
    print(f"screen: {totals[0]} controls x {count} seeds: {totals[2]} of {totals[1]} disagree")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
