"""#41: `artbot test` on 0.5.23, against the release's own code: a real fix of item 6, of
follow-up 801 and of follow-up 1001 is judged "fixed", and agrees with `verify code` run on the
same patched tree; a fix that holds on part of the claim's domain is "reproduced" with its
counterexample; a patch that breaks the code gets the error at its ART file:line; a patch whose
code looks for a token or writes outside its scratch folder finds nothing and writes nothing.

Each trial runs the item's check and regression test twice (the release, the patched copy),
confined, in about 12 s here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.patchtest.answer import render_trial
from artbot.patchtest.command import Refusal, checked_diff
from artbot.patchtest.diff import apply_to_folder, parse_diff
from artbot.patchtest.trial import newest_checked, run_trial
from artbot.records.catalog import load_catalog
from artbot.verify.apart import CannotConfine, verify_code_apart
from artbot.verify.code import CodeResult, CodeStatus
from artbot.verify.tree import open_tree
from tests.helpers.answering import FIXTURES, NO_TOKEN, REPO, trial
from tests.helpers.patchdiff import RELEASE, make_diff, snoop_source
from tests.helpers.wheels import default_wheels

pytestmark = pytest.mark.network


def verify_code_on(item: int, diff: str, tmp_path: Path) -> CodeResult:
    """`verify code`'s machinery on the same patched tree, built here."""
    patched = tmp_path / "patched"
    shutil.copytree(default_wheels().tree(RELEASE), patched)
    apply_to_folder(patched, parse_diff(diff))
    catalog = load_catalog(REPO)
    tree = open_tree(patched, catalog.audit)
    [direct] = verify_code_apart(catalog, tree, items=[item], env=NO_TOKEN)
    return direct


def verdicts(result: object) -> dict[str, str]:
    return {cid: c.verdict.value for cid, c in result.claims.items()}  # type: ignore[attr-defined]


def test_the_default_release_is_the_newest_checked_one() -> None:
    assert newest_checked(REPO) == "0.5.23"


def test_a_real_fix_of_item_6_is_fixed_and_agrees_with_verify_code_on_that_tree(
    tmp_path: Path,
) -> None:
    diff = (FIXTURES / "item06_fix.diff").read_text(encoding="utf-8")
    got = trial(6, diff)
    assert got.before.status is CodeStatus.reproduced
    assert got.after.status is CodeStatus.fixed
    assert got.regression_before is not None and got.regression_before.outcome == "failed"
    assert got.regression_after is not None and got.regression_after.outcome == "passed"
    direct = verify_code_on(6, diff, tmp_path)
    assert direct.status is got.after.status and verdicts(direct) == verdicts(got.after)
    answer = render_trial(got)
    assert "**fixed" in answer and "xfail → pass" in answer
    assert "| `eps-not-configurable` | reproduced | fixed |" in answer


@pytest.mark.parametrize("item", [801, 1001])
def test_the_suggested_fixes_of_the_open_follow_ups_are_fixed(item: int, tmp_path: Path) -> None:
    diff = (FIXTURES / f"item{item}_fix.diff").read_text(encoding="utf-8")
    got = trial(item, diff)
    assert (got.before.status, got.after.status) == (CodeStatus.reproduced, CodeStatus.fixed)
    assert got.regression_after is not None and got.regression_after.outcome == "passed"
    direct = verify_code_on(item, diff, tmp_path)
    assert direct.status is got.after.status and verdicts(direct) == verdicts(got.after)


@pytest.mark.full  # a half fix: make test's slice has item 6's real fix and the fakes
def test_a_partial_fix_of_item_6_is_reproduced_with_what_it_measured() -> None:
    """An eps on AdamParams that never reaches the optimizer: the check sees eps 1e-08."""
    got = trial(6, (FIXTURES / "item06_partial.diff").read_text(encoding="utf-8"))
    assert got.after.status is CodeStatus.reproduced
    claim = got.after.claims["eps-not-configurable"]
    assert claim.verdict.value == "reproduced" and "eps 1e-08" in claim.detail
    answer = render_trial(got)
    assert "**reproduced**" in answer and "eps 1e-08" in answer


# A fix that holds on part of the claim's domain gets the counterexample the search found.
def test_a_fallback_for_the_literal_sentinel_only_is_not_a_fix_of_801() -> None:
    got = trial(801, (FIXTURES / "item801_partial.diff").read_text(encoding="utf-8"))
    assert got.after.status is not CodeStatus.fixed
    assert any(c.domain and c.domain.counterexample for c in got.after.claims.values())
    assert "counterexample" in render_trial(got)


def test_an_absolute_tolerance_of_1e9_is_not_a_fix_of_1001() -> None:
    got = trial(1001, (FIXTURES / "item1001_partial.diff").read_text(encoding="utf-8"))
    assert got.after.status is not CodeStatus.fixed
    assert any(c.domain and c.domain.counterexample for c in got.after.claims.values())


def test_a_patch_that_breaks_the_code_gets_the_error_at_its_art_line() -> None:
    source = (default_wheels().package(RELEASE) / "loss.py").read_text(encoding="utf-8")
    line = "    logprob_diff = new_logprobs - old_logprobs\n"
    assert source.count(line) == 1
    broken = source.replace(line, line.replace("old_logprobs\n", "old_logprobz\n"))
    number = source[: source.index(line)].count("\n") + 1
    got = trial(801, make_diff("src/art/loss.py", source, broken))
    assert got.after.status is CodeStatus.could_not_run
    assert f"(at art/loss.py:{number})" in got.after.detail and "NameError" in got.after.detail
    answer = render_trial(got)
    assert "could not run" in answer and f"art/loss.py:{number}" in answer


def test_a_patch_that_snoops_finds_no_token_and_writes_nothing(tmp_path: Path) -> None:
    canary = "ghp_" + "patchtestcanary" * 3
    targets = [
        str(tmp_path / "escaped.txt"),
        str(REPO / "escaped-by-a-patch.txt"),
        str(Path.home() / "escaped-by-a-patch.txt"),
    ]
    source = (default_wheels().package(RELEASE) / "loss.py").read_text(encoding="utf-8")
    diff = make_diff("src/art/loss.py", source, snoop_source(source, targets))
    env = {**NO_TOKEN, "GH_TOKEN": canary}
    try:
        got = trial(801, diff, env=env)
    except CannotConfine:
        got = None  # no namespaces here and a token set: refused, nothing of the patch ran
    for target in targets:
        assert not Path(target).exists(), target
    if got is not None:
        assert "snooped: []" in got.after.detail, got.after.detail
        answer = render_trial(got)
        assert canary not in answer and "snooped: []" in answer
        assert got.regression_after is not None and got.regression_after.outcome == "error"


def test_at_a_terminal_artbot_test_prints_the_answer_and_refuses_what_does_not_apply(
    tmp_path: Path,
) -> None:
    fix = FIXTURES / "item801_fix.diff"
    result = CliRunner().invoke(
        cli, ["--root", str(REPO), "test", "--item", "801", "--patch", str(fix)], env=NO_TOKEN
    )
    assert result.exit_code == 0, result.output
    assert "item 801, openpipe-art 0.5.23" in result.output and ": fixed over" in result.output
    # #52: plain text at a terminal, no markdown or its escapes
    assert not any(s in result.output for s in ("**", "&lt;", "\\[", "| ", "`"))
    stale = tmp_path / "stale.diff"
    stale.write_text(make_diff("src/art/loss.py", "nothing like it\n", "changed\n"))
    refused = CliRunner().invoke(
        cli, ["--root", str(REPO), "test", "--item", "801", "--patch", str(stale)], env=NO_TOKEN
    )
    assert refused.exit_code == 2
    assert "not run: src/art/loss.py: the hunk -1,1 +1,1 does not apply" in refused.output


def test_a_second_request_about_the_same_item_and_release_runs_the_release_once() -> None:
    """`answer-tests` over several comments: the release's check and regression test run once
    in a process; each patch's side runs every time."""
    catalog = load_catalog(REPO)
    default_wheels().wheel(RELEASE)
    parsed = checked_diff((FIXTURES / "item801_partial.diff").read_text(encoding="utf-8"), RELEASE)
    assert not isinstance(parsed, Refusal), parsed
    runs = []
    for _ in range(2):
        said: list[str] = []
        out = run_trial(
            catalog, 801, parsed.files, RELEASE, source="a test's diff", env=NO_TOKEN,
            progress=said.append,
        )  # fmt: skip
        assert not isinstance(out, Refusal), out
        runs.append((out, said))
    (first, _), (second, said) = runs
    assert "patchtest: item 801: the check on the release ..." not in said
    assert "patchtest: item 801: the check on the patched tree ..." in said
    assert second.before == first.before and second.regression_before == first.regression_before
    assert second.isolation == first.isolation
