"""#41: the answer to `/artbot test`, rendered (pure): a claim's domain and counterexample when
the check searched one ("fixed over N inputs"), "one input" when it did not; the regression
test's change; a refusal in one inert line; and the planner's cap on tests per pass."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from artbot.patchtest.answer import OWN_OUTPUTS, headline, render_refusal, render_trial
from artbot.patchtest.command import Refusal
from artbot.patchtest.handover import trial_from_json, trial_json
from artbot.patchtest.plan import Comment, plan
from artbot.patchtest.probes import Probe, ProbeKind
from artbot.patchtest.regress import Regression, outcome
from artbot.patchtest.terminal import render_trial_text
from artbot.patchtest.trial import Trial
from artbot.records.catalog import load_catalog
from artbot.records.models import Claim, Contract, Finding
from artbot.status import ClaimResult, ClaimVerdict, Counterexample, Domain
from artbot.verify.code import CodeResult, CodeStatus
from artbot.verify.rejudge import BY_ARTBOT, IN_CHECK
from tests.helpers.answering import live

ROOT = Path(__file__).resolve().parents[2]
COVERS = "sentinels -1e4..-21, group sizes 2..64, fp32 and bf16"


def claim(verdict: str, *, inputs: int | None = None, found: bool = False) -> ClaimResult:
    domain = None
    if inputs is not None:
        ce = Counterexample(inputs={"sentinel": -50.0, "tokens": 3}, measured=4.8e8, bound=2.0)
        domain = Domain(
            covers=COVERS, inputs=inputs, budget_s=2.0, seconds=1.25,
            counterexample=ce if found else None,
        )  # fmt: skip
    return ClaimResult(verdict=ClaimVerdict(verdict), detail="loss 4.8e8 | <b>x</b>", domain=domain)


def result(status: str, claims: dict[str, ClaimResult], detail: str = "") -> CodeResult:
    return CodeResult(801, CodeStatus(status), "openpipe-art 0.5.23", detail, claims=claims)


def trial(
    before: CodeResult, after: CodeResult, reg: tuple[str, str] = ("failed", "passed")
) -> Trial:
    said = {"passed": "1 passed", "failed": "1 failed"}
    regs = [Regression("test_item801.py", r, said[r], 1.0) for r in reg]
    return Trial(
        801, "0.5.23", "the comment's diff", ("art/loss.py",), before, after, regs[0], regs[1],
        "ART's code ran confined: own namespaces", 9.5, {"check the release": 2.0},
    )  # fmt: skip


def test_a_fix_over_a_searched_domain_says_how_many_inputs() -> None:
    got = trial(
        result("reproduced", {"c": claim("reproduced", inputs=10, found=True)}),
        result("fixed", {"c": claim("fixed", inputs=600)}),
    )
    assert headline(got) == "fixed over 600 inputs"
    text = render_trial(got)
    assert f"| `c` | reproduced | fixed | 600 inputs (`{COVERS}`; 1.2 s) | — |" in text
    assert "xfail → pass" in text and "Took 9.5 s (check the release 2.0 s)" in text


def test_a_partial_fix_shows_its_counterexample_and_a_check_without_a_domain_one_input() -> None:
    got = trial(
        result("reproduced", {"c": claim("reproduced"), "d": claim("reproduced")}),
        result("partial", {"c": claim("reproduced", inputs=40, found=True), "d": claim("fixed")}),
        ("failed", "failed"),
    )
    text = render_trial(got)
    assert "**partial**" in text and "still xfail" in text
    assert "sentinel=-50.0, tokens=3: measured 480000000.0, bound 2.0" in text
    assert "| `d` | reproduced | fixed | one input | — |" in text


def test_a_broken_patch_shows_the_error_and_detail_from_the_child_is_inert() -> None:
    error = "NameError: name 'x' is not defined (at art/loss.py:296) [link](http://e) @someone"
    before = result("reproduced", {"c": claim("reproduced")})
    text = render_trial(trial(before, result("could not run", {}, error)))
    assert "the check could not run on the patched code" in text and "art/loss.py:296" in text
    assert "[link](" not in live(text) and "@someone" not in live(text)
    assert "<b>" not in live(render_trial(trial(before, before)))


def test_a_refusal_is_one_inert_line() -> None:
    line = render_refusal(Refusal("not 'x'\n<img src=x> @you"))
    assert "\n" not in line and "<img" not in live(line) and "@you" not in live(line)


def _junit(*cases: str) -> bytes:
    body = "".join(
        f'<testcase classname="t" name="test_{n}">{c}</testcase>' for n, c in enumerate(cases)
    )
    return f'<testsuites><testsuite name="pytest">{body}</testsuite></testsuites>'.encode()


def test_pytest_outcomes_are_read_from_its_report_only() -> None:
    assert outcome(_junit(""), 0) == ("passed", "1 passed")
    failed = outcome(_junit('<failure message="AssertionError: no eps">x</failure>'), 1)
    assert failed == ("failed", "1 failed: AssertionError: no eps")
    assert outcome(_junit('<error message="RuntimeError: boom"/>'), 1)[0] == "error"
    assert outcome(b"", 4)[0] == "could not run"
    assert outcome(b"<testsuites><testsuite errors='1'/></testsuites>", 2)[0] == "error"


def test_a_report_carrying_a_credential_or_an_entity_shows_neither() -> None:
    token = "ghp_" + "A1b2" * 9
    leaked = outcome(_junit(f'<failure message="Authorization: token {token}"/>'), 1)
    assert leaked[0] == "failed" and token not in leaked[1]
    bomb = b'<!DOCTYPE x [<!ENTITY a "aaaa">]><testsuites>&a;</testsuites>'
    assert outcome(bomb, 1)[0] == "could not run"


def test_the_cap_on_tests_per_pass_is_the_answer_to_the_request_over_it() -> None:
    diff = "```diff\n--- a/src/art/a.py\n+++ b/src/art/a.py\n@@ -1 +1 @@\n-a\n+{}\n```"
    comments = [
        Comment(n, "w", False, "/artbot test\n" + diff.format(n), f"2026-12-04T10:0{n}:00Z")
        for n in range(1, 4)
    ]
    tasks = plan(5, 801, comments, ["artbot"], {"w": "admin"}, max_runs=2)
    assert [t.kind for t in tasks] == ["run", "run", "busy"]


def _finding_with(*claims: tuple[str, Contract]) -> Finding:
    """Item 801's record with the given claims' contracts (a real record, other claims dropped)."""
    base = load_catalog(ROOT).get(801)
    made = [Claim(id=cid, text="t", symptom="s", contract=c) for cid, c in claims]
    return base.model_copy(update={"claims": made})


AUDITS = Contract(
    by="audit", must="eps reaches AdamW", domain="every field", oracle="o", tolerance="t"
)
OURS = Contract(
    by="artbot", why="the default damps", must="the default eps does not damp",
    domain="AdamParams' defaults", oracle="o", tolerance="t",
)  # fmt: skip


def test_a_fix_of_some_claims_says_what_the_contract_still_requires() -> None:
    """#51, item 6: the audit's fix with the default left alone fixes the configurability and
    leaves the damping; the answer names both, the remaining claim in its contract's words,
    whose contract it is and why, with the counterexample."""
    got = trial(
        result("reproduced", {"c": claim("reproduced"), "d": claim("reproduced")}),
        result("partial", {"c": claim("fixed"), "d": claim("reproduced", inputs=3, found=True)}),
        ("failed", "passed"),
    )
    text = render_trial(got, _finding_with(("c", AUDITS), ("d", OURS)))
    assert (
        "partial: fixes `c` and what the regression test `test_item801.py` checks; the contract "
        "also requires `d`: the default eps does not damp (artbot's: the default damps; over "
        "AdamParams' defaults); counterexample: `sentinel=-50.0, tokens=3: measured 480000000.0, "
        "bound 2.0`." in text
    )
    assert "**partial**" in text


def test_a_passing_test_beside_a_reproduced_check_is_explained() -> None:
    """#51: a reply must not say "reproduced" beside a test gone xfail → pass without saying
    why: the test covers less (the contract's test_covers), or the two disagree (artbot's bug)."""
    before = result("reproduced", {"d": claim("reproduced")})
    after = result("reproduced", {"d": claim("reproduced", inputs=30, found=True)})
    less = OURS.model_copy(update={"test_covers": "eps set to 1e-13 only"})
    text = render_trial(trial(before, after), _finding_with(("d", less)))
    assert "partial: fixes what the regression test `test_item801.py` checks" in text
    assert (
        "The regression test passes because it covers less: for d, eps set to 1e-13 only." in text
    )
    untested = OURS.model_copy(update={"test_covers": "nothing"})
    text = render_trial(trial(before, after), _finding_with(("d", untested)))
    assert "The regression test passes because it covers less: d not at all." in text
    text = render_trial(trial(before, after), _finding_with(("d", OURS)))
    assert "either artbot has a bug or the patch acts differently" in text


def test_a_fixed_check_beside_a_failing_test_is_said_in_both_renderings() -> None:
    """#53 review: the check says fixed while the regression test still fails on the same
    patched tree (a patch can game either): said, never settled in the patch's favour."""
    before = result("reproduced", {"d": claim("reproduced")})
    after = result("fixed", {"d": claim("fixed", inputs=30)})
    said = "The check says fixed but the regression test"
    for text in (
        render_trial(trial(before, after, ("failed", "failed"))),
        render_trial_text(trial(before, after, ("failed", "failed"))),
    ):
        assert said in text and "does not pass (failed)" in text
        assert "either artbot has a bug or the patch acts differently" in text
        assert "The check's process says it ran:" in text
        assert "a patch that acts differently on CUDA tensors is not seen" in text
    assert said not in render_trial(trial(before, after))  # the test passes too


def test_no_partial_line_for_a_full_fix_or_a_patch_that_fixes_nothing() -> None:
    finding = _finding_with(("c", AUDITS), ("d", OURS))
    full = trial(
        result("reproduced", {"c": claim("reproduced"), "d": claim("reproduced")}),
        result("fixed", {"c": claim("fixed", inputs=9), "d": claim("fixed", inputs=9)}),
    )
    assert "partial:" not in render_trial(full, finding)
    same = result("partial", {"c": claim("fixed"), "d": claim("reproduced")})
    assert "partial:" not in render_trial(trial(same, same, ("failed", "failed")), finding)


def test_the_answer_says_once_that_artbot_judged_the_patched_codes_outputs() -> None:
    """#53: the verdict is artbot's, from the outputs the patch's own code produced on inputs
    artbot drew; the seed is said after the run, and a claim without an Oracle is named."""
    before = result("reproduced", {"c": claim("reproduced")})
    after = replace(
        result("fixed", {"c": claim("fixed", inputs=600)}), judged={"c": BY_ARTBOT}, seed=42
    )
    text = render_trial(trial(before, after))
    said = "artbot judged each verdict itself, from the outputs the patch's own code produced"
    assert text.count(said) == 1 and "inputs artbot drew (seed 42, said only now)" in text
    assert "read the diff" in text
    plain = render_trial_text(trial(before, after))
    assert plain.count(said) == 1 and "seed 42" in plain
    mixed = replace(after, claims={**after.claims, "d": claim("fixed")},
                    judged={"c": BY_ARTBOT, "d": IN_CHECK})  # fmt: skip
    text = render_trial(trial(before, mixed))
    assert "the verdict of c itself" in text
    assert "d could not be judged: no Oracle for artbot to judge by" in text
    # nothing judged (the check could not run): the process's own word, as before
    assert OWN_OUTPUTS in render_trial(trial(before, result("could not run", {}, "x")))


def test_who_judged_and_the_seed_cross_to_the_post_job_validated() -> None:
    """The post job renders the answer from the check job's fields: who judged and the seed
    come back as the check job's artbot said, and nothing else is taken."""
    catalog = load_catalog(ROOT)
    cid = catalog.get(801).claims[0].id
    before = CodeResult(801, CodeStatus.reproduced, "openpipe-art 0.5.23", "",
                        claims={cid: claim("reproduced")})  # fmt: skip
    after = replace(before, status=CodeStatus.fixed, claims={cid: claim("fixed", inputs=5)},
                    judged={cid: BY_ARTBOT}, seed=7)  # fmt: skip
    data = trial_json(trial(before, after))
    back = trial_from_json(data, catalog, item=801, release="0.5.23", source="x")
    assert back.after.judged == {cid: BY_ARTBOT} and back.after.seed == 7
    assert back.before.judged == {} and back.before.seed is None
    for forged in ({"judged": {cid: "by the patch"}}, {"judged": {"other": BY_ARTBOT}},
                   {"seed": "7"}, {"seed": True}):  # fmt: skip
        bad = {**data, "after": {**data["after"], **forged}}
        with pytest.raises(ValueError):
            trial_from_json(bad, catalog, item=801, release="0.5.23", source="x")


PROBES = tuple(
    Probe("src/art/loss.py", 10 + n, kind, text)
    for n, (kind, text) in enumerate(
        [(ProbeKind.environment, "os.getpid"), (ProbeKind.introspection, "sys.modules"),
         (ProbeKind.files, "os.write"), (ProbeKind.process, "atexit.register"),
         (ProbeKind.harness, "'/etc/passwd'"), (ProbeKind.introspection, "gc.get_objects")]
    )
)  # fmt: skip


def test_a_fix_with_probes_is_not_vouched_for_anywhere() -> None:
    """#53: the check says fixed, but the patch reads the process's environment: the answer,
    the terminal and the exit code's rule never say fixed, and list the probes quoted."""
    fixed = trial(
        result("reproduced", {"c": claim("reproduced", inputs=10, found=True)}),
        result("fixed", {"c": claim("fixed", inputs=600)}),
    )
    assert fixed.vouched
    got = replace(fixed, probes=PROBES)
    assert not got.vouched
    words = "not vouched: fixed on artbot's inputs, but the patch reads the process's environment"
    assert headline(got) == f"{words} (os.getpid at src/art/loss.py:10)"
    text = render_trial(got)
    assert f"**{words} (`os.getpid` at `src/art/loss.py:10`)**" in text
    assert "**fixed" not in text and "- `sys.modules` at `src/art/loss.py:11`" in text
    assert "- and 1 more" in text and "gc.get_objects" not in text  # five shown
    assert "a heuristic a determined author can evade" in text
    plain = render_trial_text(got)
    assert f": {words} (os.getpid at src/art/loss.py:10) (the release:" in plain
    assert "- os.write at src/art/loss.py:12: opens files or descriptors" in plain
    # not fixed: the verdict as it is, the probes listed all the same
    broken = replace(got, after=result("reproduced", {"c": claim("reproduced")}))
    assert headline(broken) == "reproduced" and "`os.getpid`" in render_trial(broken)
    assert "reaches beyond numbers" not in render_trial(fixed)


def test_probes_cross_to_the_post_job_validated() -> None:
    """The post job renders from validated fields: a kind from the enum, a path among the
    changed files, an int line, a capped, sanitized text; anything else drops the trial."""
    catalog = load_catalog(ROOT)
    cid = catalog.get(801).claims[0].id
    before = CodeResult(801, CodeStatus.reproduced, "openpipe-art 0.5.23", "",
                        claims={cid: claim("reproduced")})  # fmt: skip
    after = replace(before, status=CodeStatus.fixed, claims={cid: claim("fixed", inputs=5)})
    data = trial_json(replace(trial(before, after), probes=PROBES))
    back = trial_from_json(data, catalog, item=801, release="0.5.23", source="x")
    assert back.probes == PROBES and not back.vouched
    good = data["probes"][0]
    for forged in ({"kind": "verdict"}, {"path": "src/art/other.py"}, {"line": "10"},
                   {"line": True}, {"line": 0}, {"extra": 1}):  # fmt: skip
        bad = {**data, "probes": [{**good, **forged}]}
        with pytest.raises(ValueError):
            trial_from_json(bad, catalog, item=801, release="0.5.23", source="x")
    long = {**data, "probes": [{**good, "text": "x" * 500 + "\n@someone"}]}
    [shown] = trial_from_json(long, catalog, item=801, release="0.5.23", source="x").probes
    assert len(shown.text) <= 80 and "\n" not in shown.text
    assert trial_from_json({**data, "probes": []}, catalog, item=801, release="0.5.23",
                           source="x").vouched  # fmt: skip
