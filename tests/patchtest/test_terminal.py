"""#52: `artbot test`'s answer at a terminal (pure): plain text, no markdown or its escapes, a
claim's domain whole, "1 input" in the singular, a failing regression test in one line, the same
domain said once, control characters from the check's child dropped."""

from __future__ import annotations

from artbot.patchtest.regress import Regression
from artbot.patchtest.terminal import plain, render_trial_text
from artbot.patchtest.trial import Trial
from artbot.status import ClaimResult, ClaimVerdict, Counterexample, Domain
from artbot.verify.code import CodeResult, CodeStatus

COVERS = "PPO, A < 0 [1e-3, 1e3]; <dtype> FP32/BF16/FP16; " + "rows x tokens; " * 20


def claim(verdict: str, inputs: int, found: bool = False) -> ClaimResult:
    ce = Counterexample(inputs={"sentinel": -50.0, "tokens": 3}, measured=4.8e8, bound=2.0)
    domain = Domain(
        covers=COVERS, inputs=inputs, budget_s=2.0, seconds=1.25,
        counterexample=ce if found else None,
    )  # fmt: skip
    return ClaimResult(verdict=ClaimVerdict(verdict), detail="loss <b>4.8e8</b>", domain=domain)


def trial(after: dict[str, ClaimResult], status: str, failure: str = "") -> Trial:
    before = CodeResult(801, CodeStatus.reproduced, "openpipe-art 0.5.23", "", claims=after)
    patched = CodeResult(801, CodeStatus(status), "openpipe-art 0.5.23", "", claims=after)
    said = failure or "1 passed"
    regs = (
        Regression("test_item801.py", "failed", "1 failed: AssertionError", 1.0),
        Regression("test_item801.py", "failed" if failure else "passed", said, 1.0),
    )
    return Trial(
        801, "0.5.23", "`fix.diff`", ("art/loss.py",), before, patched, regs[0], regs[1],
        "ART's code ran confined: own namespaces; capped: 4 GB", 9.5, {"check": 2.0},
    )  # fmt: skip


def test_plain_text_whole_domain_and_singular_counts() -> None:
    text = render_trial_text(trial({"c": claim("fixed", 1)}, "fixed"))
    assert "fixed over 1 input " in text and "1 inputs" not in text
    assert f"domain: 1 input ({' '.join(COVERS.split())}; 1.2 s)" in text  # whole, not cut
    assert not any(s in text for s in ("**", "&lt;", "\\[", "| ", "`", "…"))
    assert "xfail -> pass: 1 passed" in text
    assert "ART's code ran confined: own namespaces; no token in its environment." in text


def test_a_repeated_domain_is_said_once_and_a_failing_test_in_one_line() -> None:
    failure = "1 failed: AssertionError: ({'level': 'token'}, 1.5e6)\nassert 1.5e6 <= 2.0\n" * 9
    got = trial(
        {"c": claim("reproduced", 40, found=True), "d": claim("fixed", 40)}, "partial", failure
    )
    text = render_trial_text(got)
    assert text.count(COVERS.split()[0] + " A < 0") == 1 and "  domain: as above" in text
    assert "counterexample: sentinel=-50.0, tokens=3: measured 480000000.0, bound 2.0" in text
    [line] = [ln for ln in text.splitlines() if ln.startswith("Regression test")]
    assert "still xfail: 1 failed: AssertionError: ({'level': 'token'}, 1.5e6)" in line
    assert "assert 1.5e6" not in text


def test_control_characters_from_the_child_are_dropped() -> None:
    assert plain("red \x1b[31mtext\x1b[0m\rover\x07") == "red [31mtext [0m over"
