"""artbot's own verdict on each claim, judged in artbot's process from what the check measured.

The check process imports the code under test, which can rewrite anything there: its verdicts,
its details, the search that produced them. So a claim's verdict is not taken from it (issue
#53). Before the checks run, artbot loads each repro (its own code: it imports torch, never
ART), reads its ``ORACLES`` (``repros/_domain.py``'s :class:`Oracle`: a pure ``judge`` and how
the claim's inputs are drawn) and draws each claim's inputs with a seed the check process never
sees (:func:`draw`). The check measures exactly those inputs and returns its tape, every
``(case, raw)`` it measured, as JSON (``CodeResult.tapes``, capped by
:func:`.limits.capped_tapes`). :meth:`Plan.judge` then decides each claim here:

- a failing entry anywhere (judged here) => reproduced; the counterexample is the last failing
  entry (as the check's shrinking leaves it). A raw output the judge cannot read is a failure,
  never a pass;
- no failure => fixed only when every input artbot drew is in the tape (compared as JSON) and
  every entry passes; otherwise the claim could not run ("the check's process measured N of
  the M inputs artbot drew").

artbot's verdict replaces the check's; where they differ the detail says so. A claim whose
repro declares no Oracle could not run: its verdict would be the check's process's own
(``CodeResult.judged`` marks it "in the check's process"; every claim has an Oracle today, and
``tests/verify/test_rejudge.py`` keeps it so).
"""

from __future__ import annotations

import json
import secrets as secrets_
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from ..records.catalog import Catalog
from ..records.models import Finding
from ..repro.scripts import import_script
from ..status import ClaimResult, ClaimVerdict, Domain, Verdict, derive
from .code import CodeResult, CodeStatus, checkable, load_repro, run_check
from .tree import ArtTree

BY_ARTBOT = "by artbot"
IN_CHECK = "in the check's process"

MAX_PLAN_BYTES = 8 * 1024 * 1024  # all items' plans, as JSON, sent to the check process

Case = dict[str, Any]
Tape = list[dict[str, Any]]


def new_seed() -> int:
    """A seed the check process cannot guess (63 bits from ``secrets``)."""
    return secrets_.randbits(63)


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value, allow_nan=True))


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=True)


@dataclass
class Plan:
    """What artbot drew for one run: the seed, each item's Oracles and each claim's inputs."""

    seed: int
    oracles: dict[int, dict[str, Any]] = field(default_factory=dict)
    inputs: dict[int, dict[str, list[Case]]] = field(default_factory=dict)
    helpers: ModuleType | None = None  # repros/_domain.py, for the counterexample's shape

    def wire(self) -> dict[str, dict[str, list[Case]]]:
        """The plan as the check process gets it (JSON: items as text keys)."""
        return {str(item): claims for item, claims in self.inputs.items()}

    def judge(self, result: CodeResult) -> CodeResult:
        """``result`` (the check's) with every claim's verdict artbot's, as the module says."""
        oracles = self.oracles.get(result.item, {})
        if result.status is CodeStatus.could_not_run:
            return result  # nothing to judge: it says so itself
        claims: dict[str, ClaimResult] = {}
        judged: dict[str, str] = {}
        unjudged: list[str] = []
        # A claim artbot can judge is judged even when the check left it out.
        unsaid = ClaimResult(verdict=ClaimVerdict.not_checked, detail="")
        for cid in [*result.claims, *(c for c in oracles if c not in result.claims)]:
            claim = result.claims.get(cid, unsaid)
            oracle = oracles.get(cid)
            if oracle is None:
                why = "could not run: its repro declares no Oracle for artbot to judge it by"
                claims[cid] = _could_not_run(claim, why)
                unjudged.append(cid)
                judged[cid] = IN_CHECK
                continue
            planned = self.inputs.get(result.item, {}).get(cid, [])
            tape = result.tapes.get(cid, [])
            with self.one_thread():
                claims[cid], ran = _judge_claim(claim, oracle, planned, tape, self)
            if not ran:
                unjudged.append(cid)
            judged[cid] = BY_ARTBOT
        return _rederived(result, claims, judged, unjudged, self.seed)

    def one_thread(self) -> AbstractContextManager[None]:
        """Torch on one thread while judging (``_domain``'s rule: the inputs are small, and a
        thread pool on a loaded machine is 30 times slower); the tape cap bounds the work."""
        return self.helpers._one_thread() if self.helpers is not None else nullcontext()


def verify_code(
    catalog: Catalog,
    tree: ArtTree,
    progress: Callable[[str], None] | None = None,
    seed: int | None = None,
) -> list[CodeResult]:
    """Run each checkable finding's ``check_art`` against ART's own code from ``tree``, on the
    inputs artbot drew (``seed``, else a secret one), each verdict artbot's (:mod:`.rejudge`);
    ``progress`` hears one line as each check starts."""
    findings = checkable(catalog)
    plan = draw(catalog, findings, seed)
    out = []
    for n, finding in enumerate(findings, 1):
        if progress is not None:
            progress(f"verify: [{n}/{len(findings)}] item {finding.item} on {tree.label} ...")
        result = run_check(catalog, tree, finding, plan.inputs.get(finding.item))
        out.append(plan.judge(result))
    return out


def draw(catalog: Catalog, findings: Iterable[Finding], seed: int | None = None) -> Plan:
    """Load each finding's repro in this process (artbot's own code: never ART), read its
    ``ORACLES`` and draw each claim's inputs with ``random.Random(seed)``; ``seed`` from
    :mod:`secrets` unless given."""
    import random

    plan = Plan(seed=new_seed() if seed is None else seed)
    for finding in findings:
        oracles = oracles_of(catalog, finding)
        if not oracles:
            continue
        plan.oracles[finding.item] = oracles
        plan.inputs[finding.item] = {
            cid: as_json(o.plan(random.Random(plan.seed))) for cid, o in oracles.items()
        }
        if plan.helpers is None:
            plan.helpers = _helpers(Path(catalog.root) / finding.repro)
    if len(json.dumps(plan.wire(), allow_nan=True)) > MAX_PLAN_BYTES:
        raise ValueError(f"artbot's plan is over {MAX_PLAN_BYTES} bytes: draw fewer inputs")
    return plan


def oracles_of(catalog: Catalog, finding: Finding) -> dict[str, Any]:
    """The repro's ``ORACLES`` for the finding's declared claims (none when it has none)."""
    script = Path(catalog.root) / finding.repro
    if not script.is_file() or "ORACLES" not in script.read_text("utf-8"):
        return {}
    found = getattr(load_repro(script), "ORACLES", None) or {}
    declared = {c.id for c in finding.claims}
    return {cid: o for cid, o in found.items() if cid in declared}


def _helpers(script: Path) -> ModuleType:
    return import_script(script.parent / "_domain.py", "_artbot_rejudge_domain")


def _judge_claim(
    claim: ClaimResult, oracle: Any, planned: list[Case], tape: Tape, plan: Plan
) -> tuple[ClaimResult, bool]:
    """One claim's verdict from its tape; the second value is False when it could not run."""
    failing: tuple[Case, Any] | None = None
    for entry in tape:
        fail = judge_entry(oracle, entry["case"], entry["raw"], plan.helpers)
        if fail is not None:
            failing = (entry["case"], fail)
    taped = {_key(entry["case"]) for entry in tape}
    measured = sum(_key(case) in taped for case in planned)
    if failing is not None:
        verdict = ClaimVerdict.reproduced
    elif planned and measured == len(planned):
        verdict = ClaimVerdict.fixed
    else:
        why = (
            f"could not run: the check's process measured {measured} of the {len(planned)} "
            f"inputs artbot drew (it said {claim.verdict.value})"
        )
        return _could_not_run(claim, why), False
    domain = _domain(claim.domain, tape, failing, plan)
    said = {ClaimVerdict.reproduced: "reproduced", ClaimVerdict.fixed: "fixed"}[verdict]
    if claim.verdict is verdict:
        detail = claim.detail
    else:
        detail = (
            f"the check's process said {claim.verdict.value}; artbot's judgement of its "
            f"outputs: {said}"
        )
        if failing is not None:
            detail += f" ({_shown(failing, plan)})"
    update: dict[str, Any] = {"verdict": verdict, "detail": detail, "domain": domain}
    if verdict is not ClaimVerdict.fixed:
        update["fix"] = None
    return claim.model_copy(update=update), True


def judge_entry(oracle: Any, case: Any, raw: Any, helpers: ModuleType | None) -> Any:
    """The judge's Failure for one entry, or None; a judge that raises, or answers anything
    but None or a Failure, fails the entry."""
    try:
        fail = oracle.judge(case, raw)
    except Exception as exc:  # a garbled raw output: never a pass
        why = f"raw output artbot could not judge: {type(exc).__name__}: {exc}"[:200]
        return _failure(helpers, why, "a raw output the judge can read")
    if fail is None:
        return None
    if hasattr(fail, "measured") and hasattr(fail, "bound"):
        return fail
    return _failure(helpers, f"the judge answered {type(fail).__name__}", "None or a Failure")


def _failure(helpers: ModuleType | None, measured: str, bound: str) -> Any:
    if helpers is None:
        return type("Failure", (), {"measured": measured, "bound": bound})()
    return helpers.Failure(measured, bound)


def _shown(failing: tuple[Case, Any], plan: Plan) -> str:
    found = _found(plan, "", 1.0, 1, failing)
    return str(found.summary()) if found is not None else ""


def _found(
    plan: Plan, covers: str, budget_s: float, inputs: int, failing: tuple[Case, Any] | None
) -> Any:
    """``_domain.Found`` for artbot's verdict (its ``domain()`` is the one shape of it)."""
    if plan.helpers is None:
        return None
    found = plan.helpers.Found(covers=covers, budget_s=budget_s, seed=plan.seed)
    found.inputs, found.failure = inputs, failing
    return found


def _domain(
    given: Domain | None, tape: Tape, failing: tuple[Case, Any] | None, plan: Plan
) -> Domain | None:
    covers = given.covers if given is not None else "the inputs artbot drew"
    budget_s = given.budget_s if given is not None else 2.0
    found = _found(plan, covers, budget_s, len(tape), failing)
    if found is None or not tape:
        return None
    found.seconds = given.seconds if given is not None else 0.0
    return Domain.model_validate(found.domain())


def _could_not_run(claim: ClaimResult, why: str) -> ClaimResult:
    update = {"verdict": ClaimVerdict.not_checked, "detail": why, "fix": None, "domain": None}
    return claim.model_copy(update=update)


_STATUS = {
    Verdict.reproduced: CodeStatus.reproduced,
    Verdict.partial: CodeStatus.partial,
    Verdict.fixed: CodeStatus.fixed,
    Verdict.not_checked: CodeStatus.not_checked,
}


def _rederived(
    result: CodeResult,
    claims: dict[str, ClaimResult],
    judged: dict[str, str],
    unjudged: list[str],
    seed: int,
) -> CodeResult:
    """The item's result from artbot's claims: could not run when any claim could not."""
    if unjudged:
        why = "; ".join(f"claim {cid}: {claims[cid].detail}" for cid in unjudged)
        status, detail = CodeStatus.could_not_run, why[:600]
    else:
        status = _STATUS[derive([c.verdict for c in claims.values()])]
        said = {c: r.verdict for c, r in result.claims.items()}
        changed = [c for c in claims if claims[c].verdict is not said.get(c)]
        detail = result.detail
        if changed:
            detail = f"artbot's judgement differs from the check's process on {', '.join(changed)}"
    return replace(result, status=status, detail=detail, claims=claims, judged=judged, seed=seed)


def judged_line(results: Iterable[CodeResult]) -> str | None:
    """What ``verify`` says once the run is over: how many claims artbot judged from the
    check's outputs, on inputs drawn with which seed (said only now: the check never saw it)."""
    results = list(results)
    ours = sum(w == BY_ARTBOT for r in results for w in r.judged.values())
    theirs = sum(w == IN_CHECK for r in results for w in r.judged.values())
    seed = next((r.seed for r in results if r.seed is not None), None)
    if seed is None or not (ours or theirs):
        return None
    line = f"artbot judged {_claims(ours)} from the check's outputs on inputs it drew (seed {seed})"
    if theirs:
        line += f"; {_claims(theirs)} without an Oracle, not judged (could not run)"
    return line


def _claims(n: int) -> str:
    return f"{n} claim{'' if n == 1 else 's'}"
