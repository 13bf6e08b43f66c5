"""The answer to ``/artbot test``, rendered (pure): per claim the verdict before and after the
patch, the domain it was checked over and the counterexample, the regression test's outcome,
what ran and how long it took. A refusal is one line.

Given the finding, a patch that fixes part of the contract is answered with what remains (issue
#51, :func:`what_remains`): "partial: fixes X; the contract also requires Y", Y in the claim's
``contract`` words, with the counterexample; also when the regression test passes while the
check still finds one, saying why the two differ (``test_covers``, or artbot's bug).

Everything that came from the check's child (details, counterexamples, errors) or from the
comment (a refusal's reason) is quoted in a code span (:func:`quoted`): a patch's code writes
it, and in a code span no markdown, HTML, mention, autolink (a bare URL, ``www.``) or reference
(``#N``, ``owner/repo#N``, a commit hash) is live.
"""

from __future__ import annotations

from collections.abc import Callable

from ..records.models import Contract, Finding
from ..render.status_view import cell_text, code_span
from ..status import ClaimResult, Domain
from ..verify.code import CodeResult, CodeStatus
from ..verify.rejudge import BY_ARTBOT
from .command import Refusal
from .probes import Probe
from .regress import Regression
from .trial import Trial

TITLE = "**artbot test**"
# Said in every answer: the patch's code runs in the check's own process (#53).
OWN_OUTPUTS = (
    "The patched side's outputs, its verdicts and its test's outcome come from the process "
    "that ran the patch's own code: read the diff before trusting them."
)


def judged_by(after: CodeResult) -> str:
    """Who decided the patched side's verdicts, said once: artbot, from the outputs the
    patch's own code produced on inputs artbot drew (the seed, said only after the run); a
    claim without an Oracle is named as not judged (#53)."""
    ours = [cid for cid, who in after.judged.items() if who == BY_ARTBOT]
    theirs = [cid for cid, who in after.judged.items() if who != BY_ARTBOT]
    if not ours and not theirs:
        return OWN_OUTPUTS
    out = []
    if ours:
        which = "each verdict" if not theirs else f"the verdict of {', '.join(ours)}"
        out.append(
            f"artbot judged {which} itself, from the outputs the patch's own code produced on "
            f"inputs artbot drew (seed {after.seed}, said only now)"
        )
    if theirs:
        out.append(f"{', '.join(theirs)} could not be judged: no Oracle for artbot to judge by")
    out.append("the regression test's outcome is that process's own: read the diff")
    text = "; ".join(out) + "."
    return text if text.startswith("artbot") else text[0].upper() + text[1:]


def quoted(text: str, limit: int, *, in_table: bool = True) -> str:
    """``text`` as one inline code span of at most ``limit`` characters (see the module)."""
    flat = " ".join(text.split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return code_span(flat, in_table=in_table) if flat else ""


def render_refusal(refusal: Refusal) -> str:
    return f"{TITLE}: not run: {quoted(refusal.reason, 600, in_table=False)}"


def inputs_phrase(count: int) -> str:
    """``1 input``, ``600 inputs``."""
    return f"{count:,} input{'' if count == 1 else 's'}"


def domain_cell(claim: ClaimResult | None) -> str:
    """``300 inputs (covers; 1.2 s)`` or ``one input`` (a check that searched no domain)."""
    if claim is None or claim.domain is None:
        return "one input"
    d: Domain = claim.domain
    return f"{inputs_phrase(d.inputs)} ({quoted(d.covers, 500)}; {d.seconds:.1f} s)"


def counterexample_cell(claim: ClaimResult | None) -> str:
    if claim is None:
        return ""
    if claim.domain is not None and claim.domain.counterexample is not None:
        ce = claim.domain.counterexample
        given = ", ".join(f"{k}={v}" for k, v in ce.inputs.items())
        return quoted(f"{given}: measured {ce.measured}, bound {ce.bound}", 300)
    if claim.verdict.value == "reproduced" and claim.detail:
        return quoted(claim.detail, 300)
    return ""


def headline(trial: Trial, quote: Callable[[str], str] | None = None) -> str:
    """The verdict in a few words: ``fixed over 600 inputs``, ``reproduced``, ``the patched
    code fails``; a patch with probes is never "fixed" (``not vouched: ...``, #53). ``quote``
    shows a text of the patch's (the answer's code span; the terminal's plain line)."""
    after = trial.after
    if after.status is CodeStatus.could_not_run:
        return "the check could not run on the patched code"
    if after.status is CodeStatus.fixed and not trial.vouched:
        first = trial.probes[0]
        show = quote or (lambda text: text)
        return (
            f"not vouched: fixed on artbot's inputs, but the patch {first.kind.value} "
            f"({show(first.text)} at {show(f'{first.path}:{first.line}')})"
        )
    if after.status is CodeStatus.fixed:
        inputs = [c.domain.inputs for c in after.claims.values() if c.domain is not None]
        if inputs and len(inputs) == len(after.claims):
            over = f"fixed over {inputs_phrase(sum(inputs))}"
        else:
            over = "fixed (each claim checked on one input)" if not inputs else "fixed"
        if trial.before.status is CodeStatus.fixed:
            return over + ", as the release already was"
        return over
    return after.status.value


MAX_PROBES_SHOWN = 5
# Said wherever probes are listed (#53): what the scan is, and what it is not.
PROBES_HEURISTIC = (
    "artbot read these in the patch's text before anything ran: a numerical fix to ART needs "
    "none of them, and each can forge the check's outputs or act only under artbot's harness. "
    'The scan is a heuristic a determined author can evade, so a "fixed" is still read beside '
    "the diff."
)


def probe_lines(probes: tuple[Probe, ...], quote: Callable[[str], str]) -> list[str]:
    """The patch's probes, up to :data:`MAX_PROBES_SHOWN`, one a line, then what the scan is;
    none: nothing."""
    if not probes:
        return []
    out = [f"The patch's code reaches beyond numbers ({len(probes)} use(s)):"]
    for p in probes[:MAX_PROBES_SHOWN]:
        out.append(f"- {quote(p.text)} at {quote(f'{p.path}:{p.line}')}: {p.kind.value}")
    if len(probes) > MAX_PROBES_SHOWN:
        out.append(f"- and {len(probes) - MAX_PROBES_SHOWN} more")
    return [*out, PROBES_HEURISTIC, ""]


def _verdict(result: CodeResult, cid: str) -> str:
    if result.status is CodeStatus.could_not_run:
        return "could not run"
    claim = result.claims.get(cid)
    return claim.verdict.value if claim is not None else "not reported"


def regression_change(before: Regression | None, after: Regression, arrow: str = "→") -> str:
    """The regression test's outcome before and after the patch, e.g. "xfail → pass"."""
    if before is not None and before.outcome == "failed" and after.outcome == "failed":
        return "still xfail"
    words = {"passed": "pass", "failed": "xfail", "error": "error"}
    was = "not run" if before is None else words.get(before.outcome, before.outcome)
    return f"{was} {arrow} {words.get(after.outcome, after.outcome)}"


def _regression_line(before: Regression | None, after: Regression | None) -> str:
    if after is None:
        return "Regression test: this item has none."
    change = regression_change(before, after)
    detail = quoted(after.detail, 300, in_table=False) if after.detail else ""
    return f"Regression test `{after.test}` (run with `--runxfail`): {change} ({detail})."


def _remaining(cid: str, contract: Contract | None, claim: ClaimResult | None) -> str:
    """One claim still reproduced, as the contract requires it, with the counterexample."""
    if contract is None:
        text = f"`{cid}`"
    else:
        whose = "the audit's" if contract.by == "audit" else f"artbot's: {contract.why}"
        text = f"`{cid}`: {contract.must} ({whose}; over {contract.domain})"
    found = counterexample_cell(claim)
    return cell_text(text, 600) + (f"; counterexample: {found}" if found else "")


# What no check here can see, said in every answer (the #53 review's device-gated fakes).
CPU_ONLY = (
    "Every check runs on CPU tensors: a patch that acts differently on CUDA tensors is not seen."
)
DISAGREE = (
    "the two hold one contract, so either artbot has a bug or the patch acts differently "
    "under one of them: read the diff."
)


def check_and_test_disagree(trial: Trial) -> str | None:
    """The check says fixed while the regression test, run on the same patched tree, does not
    pass: said, never settled in the patch's favour (either can be what the patch games)."""
    reg = trial.regression_after
    if trial.after.status is not CodeStatus.fixed or reg is None or reg.outcome == "passed":
        return None
    return (
        f"The check says fixed but the regression test `{reg.test}` does not pass "
        f"({reg.outcome}): {DISAGREE}"
    )


def what_remains(trial: Trial, finding: Finding | None) -> list[str]:
    """ "partial: fixes X; the contract also requires Y", when the patch fixes part of the
    contract: some of the claims, or the regression test's cases but not the check's domain."""
    after = trial.after
    if after.status in (CodeStatus.fixed, CodeStatus.could_not_run) or not after.claims:
        return []
    contracts = {c.id: c.contract for c in finding.claims} if finding is not None else {}
    # What the patch fixed: claims reproduced on the release, and the regression test's cases.
    fixed = [
        cid
        for cid, c in after.claims.items()
        if c.verdict.value == "fixed" and _verdict(trial.before, cid) == "reproduced"
    ]
    open_ = [cid for cid, c in after.claims.items() if c.verdict.value == "reproduced"]
    reg, reg_before = trial.regression_after, trial.regression_before
    test_fixed = (
        reg is not None
        and reg.outcome == "passed"
        and (reg_before is None or reg_before.outcome != "passed")
    )
    if not open_ or not (fixed or test_fixed):
        return []
    parts = [f"`{cid}`" for cid in fixed]
    if test_fixed and reg is not None:
        parts.append(f"what the regression test `{reg.test}` checks")
    required = "; and ".join(
        _remaining(cid, contracts.get(cid), after.claims[cid]) for cid in open_
    )
    out = [f"partial: fixes {' and '.join(parts)}; the contract also requires {required}.", ""]
    if test_fixed:
        covers = {c: k for c in open_ if (k := contracts.get(c)) is not None and k.test_covers}
        if covers:
            said = "; ".join(
                f"{c} not at all" if k.untested else f"for {c}, {k.test_covers}"
                for c, k in covers.items()
            )
            out += [
                f"The regression test passes because it covers less: {cell_text(said, 400)}.",
                "",
            ]
        else:
            out += [
                "The regression test passes while the check, over the same contract, does not: "
                f"{DISAGREE}",
                "",
            ]
    return out


def render_trial(trial: Trial, finding: Finding | None = None) -> str:
    """The answer's body (the responder adds its hidden marker); with ``finding``, what a partial
    fix leaves, in its contract's words."""
    before, after = trial.before, trial.after
    files = ", ".join(f"`{p}`" for p in trial.changed)

    def quote(text: str) -> str:
        return quoted(text, 120, in_table=False)

    out = [
        f"{TITLE}: item {trial.item}, openpipe-art {trial.release} with {trial.source} "
        f"({files}): **{headline(trial, quote)}** (the release: {before.status.value}).",
        "",
        *probe_lines(trial.probes, quote),
        *what_remains(trial, finding),
        *([text, ""] if (text := check_and_test_disagree(trial)) else []),
    ]
    if after.status is CodeStatus.could_not_run:
        out += [f"The check on the patched code: {quoted(after.detail, 600, in_table=False)}", ""]
    claim_ids = list(after.claims) or list(before.claims)
    if claim_ids:
        out += [
            "| claim | release | patched | domain (patched) | counterexample (patched) |",
            "|---|---|---|---|---|",
        ]
        for cid in claim_ids:
            claim = after.claims.get(cid)
            out.append(
                f"| `{cid}` | {_verdict(before, cid)} | {_verdict(after, cid)} | "
                f"{domain_cell(claim)} | {counterexample_cell(claim) or '—'} |"
            )
        out.append("")
    out += [_regression_line(trial.regression_before, trial.regression_after), ""]
    ran = ", ".join(after.ran or before.ran)
    took = "; ".join(f"{k} {v:.1f} s" for k, v in trial.timings.items())
    shown = quoted(ran, 600, in_table=False) or "nothing of ART's"
    out.append(f"The check's process says it ran: {shown}. Took {trial.seconds:.1f} s ({took}).")
    out.append(f"{cell_text(trial.isolation, 600)}; no token in its environment.")
    out.append(CPU_ONLY)
    out.append(cell_text(judged_by(after), 600))
    return "\n".join(out) + "\n"
