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
unless given); ``nice -n 10`` it on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from artbot.records.catalog import Catalog, load_catalog
from artbot.records.models import Finding
from artbot.verify.code import CodeStatus, checkable, run_check
from artbot.verify.limits import MAX_TAPE_ENTRIES
from artbot.verify.rejudge import Plan, _judged, as_json, draw, new_seed
from artbot.verify.tree import open_tree
from tests.helpers.controls import (
    ADVERSARIAL,
    ROOT,
    Edit,
    check,
    claim_verdicts,
    controlled_copy,
    load_adversarial,
    load_control,
    recorded,
)
from tests.helpers.wheels import RELEASES, default_wheels

KINDS = ("shipped", "fix", "unfix", "real", "harmless", "fake", "half")
CHUNK = MAX_TAPE_ENTRIES // 2  # planned cases a claim per check: room for the shrinking's


class Trouble(RuntimeError):
    """A check that could not run, or measured nothing of what it was sent."""


@dataclass(frozen=True)
class Control:
    """One control on one release, for one item: the edits and what CI requires of it."""

    kind: str
    name: str
    version: str
    item: int
    edits: tuple[Edit, ...]
    expect: dict[str, str] | None  # None: some claim reproduced (an unfix)

    def agrees(self, verdicts: dict[str, str]) -> bool:
        if self.expect is None:
            return "reproduced" in verdicts.values()
        return verdicts == self.expect

    def expected(self) -> str:
        if self.expect is None:
            return "some reproduced"
        values = set(self.expect.values())
        if len(values) == 1:
            return values.pop()
        return "fixed: " + ",".join(c for c, v in self.expect.items() if v == "fixed")


def controls(
    catalog: Catalog,
    items: list[int],
    versions: list[str],
    kinds: list[str],
    as_shipped: Callable[[int, str], dict[str, str]],
) -> list[Control]:
    """Every control of ``items`` on ``versions`` of the ``kinds`` asked, in CI's terms. Where a
    release's verdicts are not recorded, ``tests/verify/test_controls.py`` picks the fix or the
    unfix by what the check says of the release as shipped: ``as_shipped(item, version)``."""
    out = []
    for version in versions:
        for item in items:
            shipped = recorded(catalog, item, version)
            if shipped is not None:
                out.append(Control("shipped", "as shipped", version, item, (), shipped))
            elif {"fix", "unfix"} & set(kinds):
                shipped = as_shipped(item, version)
            else:
                continue
            control = load_control(item)
            kind = "fix" if "reproduced" in shipped.values() else "unfix"
            edits = tuple(control.edits(kind, version)) if control is not None else ()
            if edits:
                expect = {c: "fixed" for c in shipped} if kind == "fix" else None
                out.append(Control(kind, f"item{item:02d}.toml", version, item, edits, expect))
    for path in sorted(ADVERSARIAL.glob("*.toml")):
        adversarial = load_adversarial(path)
        named = re.match(r"item(\d+)_(fake|half|real)_", path.name)
        kind = named.group(2) if named else adversarial.kind
        if adversarial.items == "all":
            reach: tuple[int, ...] = tuple(items)
        elif isinstance(adversarial.items, tuple):
            reach = adversarial.items
        else:
            reach = (int(named.group(1)),) if named else ()
        for version in adversarial.releases:
            for item in reach:
                if item not in items or version not in versions:
                    continue
                expect = adversarial.expect or recorded(catalog, item, version)
                if expect is not None:
                    out.append(Control(kind, path.stem, version, item, adversarial.edits, expect))
    order = {k: n for n, k in enumerate(kinds)}
    return sorted((c for c in out if c.kind in order), key=lambda c: order[c.kind])


@dataclass
class Screened:
    """What one control's screen found: per seed, each claim's verdict; the first failing case
    per (claim, seed) and the edges' failure per claim."""

    seeds: list[int]
    verdicts: list[dict[str, str]] = field(default_factory=list)
    failing: dict[tuple[str, int], str] = field(default_factory=dict)
    checks: int = 0
    inputs: int = 0  # planned inputs measured, in all its checks


def _key(case: Any) -> str:
    return json.dumps(case, sort_keys=True, allow_nan=True)


def screen_draws(
    catalog: Catalog, finding: Finding, root: Path, label: str, seeds: list[int]
) -> Screened:
    """Each claim's edges and each seed's draws, measured in as few checks as the searches'
    stops allow; each (case, raw) judged by artbot's own rule."""
    plan = draw(catalog, [finding], seeds[0])
    oracles = plan.oracles.get(finding.item, {})
    queue: dict[str, list[tuple[int, Any]]] = {}  # claim -> (seed index, -1 for an edge; case)
    for cid, oracle in oracles.items():
        cases = [(-1, as_json(c)) for c in (oracle.edges() if oracle.edges else [])]
        for n, seed in enumerate(seeds):
            rng = random.Random(seed)
            if oracle.sample is not None:
                cases += [(n, as_json(oracle.sample(rng))) for _ in range(oracle.draws)]
        queue[cid] = cases
    found = Screened(seeds)
    reproduced: dict[str, set[int]] = {cid: set() for cid in oracles}
    tree = open_tree(root, catalog.audit, label=label)
    # A claim already decided is sent one input that passed (else its first): a check may
    # expect each claim's search to have measured something, as every plan artbot draws has.
    spare = {cid: q[:1] for cid, q in queue.items()}
    while any(queue.values()):
        sent = {cid: q[:CHUNK] for cid, q in queue.items()}
        wire = {c: [x for _, x in s or spare[c]] for c, s in sent.items()}
        result = run_check(catalog, tree, finding, wire)
        found.checks += 1
        if result.status is CodeStatus.could_not_run:
            raise Trouble(result.detail[:300])
        for cid, cases in sent.items():
            if not cases:
                continue
            measured, failed = _measured(oracles[cid], cases, result.tapes.get(cid, []), plan)
            if failed is None and measured == 0:
                raise Trouble(f"claim {cid}: the check measured none of {len(cases)} inputs")
            if measured > 1 or failed is None:
                spare[cid] = cases[:1]
            found.inputs += measured
            rest = queue[cid][measured:]
            if failed is not None:
                group, shown = failed
                hit = range(len(seeds)) if group < 0 else [group]
                for n in hit:
                    reproduced[cid].add(n)
                    found.failing.setdefault((cid, n), shown)
                rest = [] if group < 0 else [x for x in rest if x[0] != group]
            queue[cid] = rest
    for n in range(len(seeds)):
        found.verdicts.append({c: "reproduced" if n in reproduced[c] else "fixed" for c in oracles})
    return found


def _measured(
    oracle: Any, cases: list[tuple[int, Any]], tape: list[dict[str, Any]], plan: Plan
) -> tuple[int, tuple[int, str] | None]:
    """How many of ``cases`` the tape holds, in order, through the first failing one, and that
    one's seed index and what it showed (None: none failed)."""
    n = 0
    with plan._one_thread():
        for entry in tape:
            if n >= len(cases) or _key(entry["case"]) != _key(cases[n][1]):
                break  # the shrinking's entries, after the failure
            fail = _judged(oracle, entry["case"], entry["raw"], plan.helpers)
            n += 1
            if fail is not None:
                shown = f"{_short(entry['case'])}: measured {fail.measured}, bound {fail.bound}"
                return n, (cases[n - 1][0], shown)
    return n, None


def _short(case: Any) -> str:
    return json.dumps(case, allow_nan=True)[:240]


def screen_seeds(
    catalog: Catalog, finding: Finding, root: Path, label: str, seeds: list[int]
) -> Screened:
    """One check per seed, each drawn and judged as CI does."""
    found = Screened(seeds)
    for seed in seeds:
        result = check(catalog, root, finding.item, label, seed)
        found.checks += 1
        if result.status is CodeStatus.could_not_run:
            raise Trouble(result.detail[:300])
        found.inputs += sum(len(t) for t in result.tapes.values())
        verdicts = claim_verdicts(result)
        found.verdicts.append(verdicts)
        for cid, claim in result.claims.items():
            counter = claim.domain.counterexample if claim.domain is not None else None
            if verdicts[cid] == "reproduced" and counter is not None:
                shown = f"{counter.inputs}: measured {counter.measured}, bound {counter.bound}"
                found.failing[(cid, len(found.verdicts) - 1)] = shown
    return found


def report(control: Control, found: Screened, confirm: Callable[[int], str] | None) -> str:
    """The control's line: seeds, disagreements, and the first with what it showed."""
    bad = [n for n, v in enumerate(found.verdicts) if not control.agrees(v)]
    line = f"{len(found.seeds):5} {len(bad):5}"
    if not bad:
        return line
    n = bad[0]
    verdicts = found.verdicts[n]
    wrong = [c for c in verdicts if control.expect is not None and verdicts[c] != control.expect[c]]
    what = "; ".join(
        f"{c} {verdicts[c]}" + (f" on {found.failing[(c, n)]}" if (c, n) in found.failing else "")
        for c in wrong or verdicts
    )
    again = f" [CI's path: {confirm(found.seeds[n])}]" if confirm is not None else ""
    return f"{line}  first: seed {found.seeds[n]}: {what}{again}"


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
    drawn = [f for f in checkable(catalog) if _has_draws(catalog, f)]
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
    chosen = controls(catalog, items, versions, kinds, as_shipped)
    scratch = Path(tempfile.mkdtemp(prefix="artbot-screen-"))
    print(
        f"{'release':8} {'item':>5} {'kind':8} {'expected':16} {'seeds':>5} {'wrong':>5}  control"
    )
    totals = [0, 0, 0]  # controls, seeds screened, disagreeing
    for n, control in enumerate(chosen):
        if args.name and args.name not in control.name:
            continue
        finding = next(f for f in catalog.findings if f.item == control.item)
        release = wheels.tree(control.version)
        root = (
            controlled_copy(release, scratch / f"c{n}", control.edits) if control.edits else release
        )
        label = f"{control.version} + {control.name}"
        cpu, wall = time.process_time(), time.perf_counter()
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
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        cost = f"{found.checks} checks, {found.inputs} inputs, {cpu:.0f} s CPU"
        print(f"{head} {line}  {control.name} ({cost})", flush=True)
        totals[0] += 1
        totals[1] += len(found.verdicts)
        totals[2] += sum(not control.agrees(v) for v in found.verdicts)
    print(f"screen: {totals[0]} controls x {count} seeds: {totals[2]} of {totals[1]} disagree")
    return 0


def _has_draws(catalog: Catalog, finding: Finding) -> bool:
    plan = draw(catalog, [finding], 0)
    return any(
        o.sample is not None and o.draws > 0 for o in plan.oracles.get(finding.item, {}).values()
    )


if __name__ == "__main__":
    raise SystemExit(main())
