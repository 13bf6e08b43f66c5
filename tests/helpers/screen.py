"""The screen of tests/screen_controls.py (a benchmark run by hand): each control's check over many
of artbot's seeds, judged as CI judges it (``artbot/verify/rejudge.py``).

- ``controls(catalog, items, versions, kinds, as_shipped, name) -> list[Control]``: every control
  CI runs for those items and releases (the release as shipped, ``itemNN.toml``'s fix or unfix,
  the adversarial files), each with the verdicts CI requires (``Control.agrees``).
- ``screen_draws(catalog, finding, root, label, seeds) -> Screened``: each claim's edges and
  each seed's draws (what ``draw`` takes from ``random.Random(seed)``) measured in as few checks
  as the searches' stops allow (``settle`` keeps the books); ``screen_seeds``: one check per
  seed, as CI runs it. ``Screened.verdicts``: per seed, each claim's verdict.
- ``report(control, found, confirm) -> str``: seeds, disagreements, and the first with what it
  showed (``confirm(seed)``: the same seed through CI's own path).
- ``has_draws(catalog, finding)``: whether any claim of the finding draws random inputs.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from artbot.records.catalog import Catalog
from artbot.records.models import Finding
from artbot.verify.code import CodeStatus, run_check
from artbot.verify.limits import MAX_TAPE_ENTRIES
from artbot.verify.rejudge import as_json, draw, judge_entry
from artbot.verify.tree import open_tree
from tests.helpers.controls import (
    ADVERSARIAL,
    Edit,
    check,
    claim_verdicts,
    load_adversarial,
    load_control,
    recorded,
)

KINDS = ("shipped", "fix", "unfix", "real", "harmless", "fake", "half")
Queued = list[tuple[int, Any]]  # a claim's cases: (seed index, or -1 for an edge; the case)
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
    name: str = "",
) -> list[Control]:
    """Every control of ``items`` on ``versions`` of the ``kinds`` asked, in CI's terms. Where a
    release's verdicts are not recorded, ``tests/verify/test_controls.py`` picks the fix or the
    unfix by what the check says of the release as shipped: ``as_shipped(item, version)``.
    ``name``: only the controls whose name holds it (the shipped release's is "as shipped")."""
    out = []
    for version in versions:
        for item in items:
            shipped = recorded(catalog, item, version)
            if shipped is not None:
                out.append(Control("shipped", "as shipped", version, item, (), shipped))
            elif {"fix", "unfix"} & set(kinds) and name in f"item{item:02d}.toml":
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
    chosen = (c for c in out if c.kind in order and name in c.name)
    return sorted(chosen, key=lambda c: order[c.kind])


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
    queue: dict[str, Queued] = {}
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
        wire = {c: [x for _, x in q[:CHUNK] or spare[c]] for c, q in queue.items()}
        result = run_check(catalog, tree, finding, wire)
        found.checks += 1
        if result.status is CodeStatus.could_not_run:
            raise Trouble(result.detail[:300])
        for cid, oracle in oracles.items():
            if not queue[cid]:
                continue

            def judged(case: Any, raw: Any, oracle: Any = oracle) -> Any:
                return judge_entry(oracle, case, raw, plan.helpers)

            with plan.one_thread():
                rest, measured, failed = settle(queue[cid], result.tapes.get(cid, []), judged)
            if failed is None and measured == 0:
                raise Trouble(f"claim {cid}: the check measured none of its inputs")
            if measured > 1 or failed is None:
                spare[cid] = queue[cid][:1]
            found.inputs += measured
            if failed is not None:
                group, shown = failed
                for n in range(len(seeds)) if group < 0 else [group]:
                    reproduced[cid].add(n)
                    found.failing.setdefault((cid, n), shown)
            queue[cid] = rest
    for n in range(len(seeds)):
        found.verdicts.append({c: "reproduced" if n in reproduced[c] else "fixed" for c in oracles})
    return found


def settle(
    queue: Queued, tape: list[dict[str, Any]], judged: Callable[[Any, Any], Any]
) -> tuple[Queued, int, tuple[int, str] | None]:
    """One claim after a check that was sent ``queue[:CHUNK]``: the cases left, how many the
    tape holds (in order, through the first that ``judged`` fails), and that one's seed index
    and what it showed. An edge's failure decides every seed (nothing is left); a draw's
    decides its own seed (its other draws are dropped); the shrinking's entries, after the
    failure, and cases past a capped tape are not counted (those are sent again)."""
    sent = queue[:CHUNK]
    n = 0
    failed: tuple[int, str] | None = None
    for entry in tape:
        if n >= len(sent) or _key(entry["case"]) != _key(sent[n][1]):
            break
        fail = judged(entry["case"], entry["raw"])
        n += 1
        if fail is not None:
            failed = (
                sent[n - 1][0],
                f"{_short(entry['case'])}: measured {fail.measured}, bound {fail.bound}",
            )
            break
    rest = queue[n:]
    if failed is not None:
        rest = [] if failed[0] < 0 else [x for x in rest if x[0] != failed[0]]
    return rest, n, failed


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


def has_draws(catalog: Catalog, finding: Finding) -> bool:
    plan = draw(catalog, [finding], 0)
    return any(
        o.sample is not None and o.draws > 0 for o in plan.oracles.get(finding.item, {}).values()
    )
