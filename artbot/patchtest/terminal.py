"""The answer to ``artbot test`` at a terminal (pure): the facts of the comment artbot posts for
``/artbot test`` (:mod:`.answer`), as plain text. No markdown and none of its escapes (``&lt;``,
``\\[``): every text from the check's child is one line with its control characters dropped, so
it cannot move the cursor or recolour the terminal. A claim's domain is shown whole; what is the
same as the claim above (the domain searched) is said once, then "as above", and the
confinement's caps, the same every run, are folded to its first clause; a failing regression
test is the first line of pytest's message.
"""

from __future__ import annotations

import re

from ..records.models import Finding
from ..status import ClaimResult
from ..verify.code import CodeStatus
from .answer import (
    CPU_ONLY,
    _verdict,
    check_and_test_disagree,
    headline,
    inputs_phrase,
    judged_by,
    probe_lines,
    regression_change,
    what_remains,
)
from .regress import Regression
from .trial import Trial

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def plain(text: str, limit: int | None = 200) -> str:
    """``text`` as one line of plain text, control characters dropped; past ``limit``
    characters cut at a word, then "…" (None: whole)."""
    flat = " ".join(_CONTROL.sub(" ", text).split())
    if limit is None or len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip() + "…"


def _domain(claim: ClaimResult | None) -> str:
    if claim is None or claim.domain is None:
        return "one input (no domain searched)"
    d = claim.domain
    return f"{inputs_phrase(d.inputs)} ({plain(d.covers, None)}; {d.seconds:.1f} s)"


def _counterexample(claim: ClaimResult | None) -> str:
    if claim is None:
        return ""
    if claim.domain is not None and claim.domain.counterexample is not None:
        ce = claim.domain.counterexample
        given = ", ".join(f"{k}={v}" for k, v in ce.inputs.items())
        return plain(f"{given}: measured {ce.measured}, bound {ce.bound}")
    if claim.verdict.value == "reproduced" and claim.detail:
        return plain(claim.detail)
    return ""


def regression_line(before: Regression | None, after: Regression | None) -> str:
    """The regression test in one line: its change, and a failure's first line."""
    if after is None:
        return "Regression test: this item has none."
    change = regression_change(before, after, "->")
    first = after.detail.strip().splitlines()[0] if after.detail.strip() else ""
    said = f": {plain(first, 160)}" if first else ""
    return f"Regression test {after.test} (with --runxfail): {change}{said}"


def render_trial_text(trial: Trial, finding: Finding | None = None) -> str:
    """What ``artbot test`` prints: the headline, what a partial fix leaves (given the finding),
    then per claim its verdicts, domain and counterexample, the regression test, what ran and
    where."""
    before, after = trial.before, trial.after
    out = [
        f"artbot test: item {trial.item}, openpipe-art {trial.release} with "
        f"{plain(trial.source.strip('`'))} ({', '.join(trial.changed)}): "
        f"{headline(trial, lambda t: plain(t, 120))} (the release: {before.status.value})",
        "",
        *probe_lines(trial.probes, lambda t: plain(t, 120)),
    ]
    # The answer's "partial: fixes X; the contract also requires Y", without its code spans.
    out += [plain(line.replace("`", ""), None) for line in what_remains(trial, finding)]
    if disagree := check_and_test_disagree(trial):
        out += [plain(disagree.replace("`", ""), None), ""]
    if after.status is CodeStatus.could_not_run:
        out += [f"The check on the patched code: {plain(after.detail, 600)}", ""]
    previous = None
    for cid in list(after.claims) or list(before.claims):
        claim = after.claims.get(cid)
        out.append(f"claim {cid}: {_verdict(before, cid)} -> {_verdict(after, cid)} (patched)")
        domain = _domain(claim)
        out.append(f"  domain: {'as above' if domain == previous else domain}")
        previous = domain
        if found := _counterexample(claim):
            out.append(f"  counterexample: {found}")
    out += ["", regression_line(trial.regression_before, trial.regression_after)]
    ran = plain(", ".join(after.ran or before.ran), 600) or "nothing of ART's"
    took = "; ".join(f"{k} {v:.1f} s" for k, v in trial.timings.items())
    out.append(f"The check's process says it ran: {ran}. Took {trial.seconds:.1f} s ({took}).")
    # Where it ran, folded to its first clause (the caps are the same every run).
    out.append(f"{plain(trial.isolation.split(';')[0], 300)}; no token in its environment.")
    out.append(CPU_ONLY)
    out.append(plain(judged_by(after), None))
    return "\n".join(out) + "\n"
