"""#53: a hostile release (or patch) attacks the check from inside the confinement, and each
attack, run for real against ``verify_code_apart``, holds.

Each test crafts ``art/loss.py`` (item 7's check imports it) to attack at import, as a wheel's
code would; nothing here is a mock of the attack.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from artbot.records.catalog import load_catalog
from artbot.verify.code import CodeStatus
from artbot.verify.limits import MB, Limits
from artbot.verify.rejudge import BY_ARTBOT, verify_code
from artbot.verify.tree import open_tree
from tests.helpers.confine import (
    ENV,
    SPLIT_CLAIM,
    catalog,
    confined_here,
    run_apart,
    split_item7,
    tree_with,
)

pytestmark = [pytest.mark.e2e, pytest.mark.repro]

FORGED = {
    "results": [
        {
            "item": 7,
            "status": "fixed",
            "detail": "forged by the release",
            "claims": {"policy-ratio-applied-twice": {"verdict": "fixed", "detail": "forged"}},
        }
    ]
}

# Attack 3: the release leaves a link where a results file would be, to a file outside the
# confinement that artbot's process can read (here: one holding a forged verdict).
SYMLINK = """
import os
for name in ("results.json", "report.xml"):
    os.symlink({target!r}, name)
"""


def test_a_results_file_replaced_by_a_link_is_not_followed(place: Path) -> None:
    forged = place / "forged.json"
    forged.write_text(json.dumps(FORGED))
    forged.chmod(0o644)
    tree = tree_with(place / "t", SYMLINK.format(target=str(forged)))
    [result], said = run_apart(place, tree)
    confined_here(said)
    # The results come over the pipe the check inherited: the link is never opened.
    assert result.status is CodeStatus.could_not_run, result
    # It could not run for want of ART's code (the tree holds only the attack), never forged.
    assert "forged" not in result.detail
    assert "has no attribute" in result.detail or "missing module art." in result.detail


# The release rewrites the results it hands back (the check runs in its process).
REWRITE = """
import json
dumps = json.dumps
def rewrite(data, *args, **kwargs):
    if isinstance(data, dict) and "results" in data:
        change = {change}
        change(data)
    return dumps(data, *args, **kwargs)
json.dumps = rewrite
"""
COMMANDS = "lambda d: d['results'][0].update(detail='``` ##[add-mask]x ::stop-commands::tok')"


def test_workflow_commands_and_fences_in_the_checks_text_reach_no_log_line(place: Path) -> None:
    """Attack 8: ``##[`` and ``::`` anywhere in a line of verify's log, and a detail that
    starts with a fence, would be read by the runner or close the step summary's block."""
    root = catalog(place)
    tree = tree_with(place / "t", REWRITE.format(change=COMMANDS))
    env = {**ENV, "HOME": str(place), "GITHUB_ACTIONS": "true"}
    verify = subprocess.run(
        [sys.executable, "-m", "artbot", "--root", str(root), "verify", "--art-src", str(tree)],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if "ran confined" not in verify.stdout + verify.stderr:
        pytest.skip(f"no confinement here: {verify.stderr[-300:]}")
    lines = (verify.stdout + verify.stderr).splitlines()
    assert any("add-mask" in line for line in lines), lines  # the detail is shown, made inert
    for line in lines:
        assert "##[" not in line and "::" not in line, line
        assert not line.lstrip().startswith(("```", "~~~")), line


def _fix_lines(look_for: str) -> str:
    """A change that makes item 7's result "fixed", resting on 400 invented fix lines."""
    lines = [{"path": "art/loss.py", "line": 1, "look_for": look_for}] * 400
    claim = {"verdict": "fixed", "detail": "x", "method": "ran", "fix": {"lines": lines}}
    claims = {"policy-ratio-applied-twice": claim}
    result = {"item": 7, "status": "fixed", "detail": "x", "claims": claims}
    return f"lambda d: d.update(results=[{result!r}])"


@pytest.mark.parametrize("look_for", ["invented by the release", ""])
def test_fix_lines_the_release_invents_or_piles_up_are_refused_here(
    place: Path, look_for: str
) -> None:
    """Attack 7: a release's code recorded 400 invented "fix" lines per claim. Each line is
    checked again in artbot's process against the release, and a claim cites at most 8."""
    tree = tree_with(place / "t", REWRITE.format(change=_fix_lines(look_for)))
    [result], said = run_apart(place, tree)
    confined_here(said)
    assert result.status is CodeStatus.could_not_run, result
    assert not result.claims and "no valid results" in result.detail


# Attack 1 (and 2's memfds): the kernel's namespace surface and memory no cap counts. Each
# call is tried for real from the release's code; what the kernel answered is reported back.
KERNEL = """
import ctypes, errno, json, os
libc = ctypes.CDLL(None, use_errno=True)
tried = {}
def call(name, result):
    code = errno.errorcode.get(ctypes.get_errno(), "?")
    tried[name] = "ok" if result >= 0 else code
call("unshare user", libc.unshare(0x10000000))
call("unshare net", libc.unshare(0x40000000))
call("mount tmpfs", libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, None))
call("setns", libc.setns(0, 0))
call("bpf", libc.syscall(321, 0, 0, 0))
call("keyctl", libc.syscall(250, 0, 0, 0, 0, 0))
call("ptrace", libc.syscall(101, 0, 0, 0, 0))
call("io_uring_setup", libc.syscall(425, 1, 0))
try:
    os.close(os.memfd_create("big"))
    tried["memfd_create"] = "ok"
except OSError as exc:
    tried["memfd_create"] = errno.errorcode.get(exc.errno, "?")
pid = os.fork()
if pid == 0:
    os._exit(0)
tried["fork"] = "ok" if os.waitpid(pid, 0)[1] == 0 else "failed"
raise RuntimeError("tried " + json.dumps(tried, sort_keys=True))
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the attack's numbers are x86_64's")
def test_the_release_can_make_no_namespace_mount_or_memfd(place: Path) -> None:
    """Attack 1: the release's code made a user namespace inside the confinement and got
    every capability back; attack 2: it held 4.5 GB in memfds, which no cap counts."""
    tree = tree_with(place / "t", KERNEL)
    [result], said = run_apart(place, tree)
    confined_here(said)
    assert "seccomp" in said
    tried = json.JSONDecoder().raw_decode(result.detail.split("tried ", 1)[1])[0]
    assert tried.pop("fork") == "ok"  # an ordinary process still works
    assert set(tried.values()) == {"EPERM"}, tried


FILL = """
import errno, os
written, error = 0, None
chunk = b"x" * (1 << 20)
try:
    for n in range(256):
        with open(f"fill-{n}", "wb") as out:
            out.write(chunk)
        written += len(chunk)
except OSError as exc:
    error = errno.errorcode.get(exc.errno, "?")
raise RuntimeError(f"filled {written} {error}")
"""


def test_the_scratch_folder_has_a_size_in_all(place: Path) -> None:
    """Attack 2: the scratch folder had no total size (only each file was capped); and the
    memory cap, one per process, was said as if it held for the whole check."""
    limits = Limits(scratch_bytes=16 * MB)
    [result], said = run_apart(place, tree_with(place / "t", FILL), limits)
    confined_here(said)
    written, error = result.detail.split("filled ", 1)[1].split()[:2]
    assert int(written) <= 16 * MB and error == "ENOSPC", result.detail
    assert "of memory per process" in said and "s of CPU per process" in said


# Attack 4: a patch that fixes nothing writes its own verdict. The check process imports the
# patched code, which rewrites the check there: its verdict (``_evidence.claim``), its search
# (``_domain.search``), what it tapes. Item 7's check is the split example
# (tests/fixtures/split/item07_split.py: ART's loss_fn measured there, judged by artbot); the
# code is openpipe-art 0.5.20's, where the claim holds, with the forgery appended to loss.py.
FORGE = """
import sys as _sys
def _forge():
    frame = _sys._getframe(1)
    while frame is not None and "check_art" not in frame.f_globals:
        frame = frame.f_back
    repro = frame.f_globals
    domain, evidence = repro["_domain"], repro["_evidence"]
    claim = evidence.claim
    def fixed(verdict, detail, **kwargs):
        kwargs.pop("fix", None)
        return claim(False, "fixed over every input (forged)", **kwargs)
    def search(*, claim, channel, measure, judge, covers, **_):
        tape = channel.tape.setdefault(claim, [])
        for case in channel.plan.get(claim, []):
            {forge}
        found = domain.Found(covers=covers, budget_s=2.0, seed=None)
        found.inputs = max(1, len(tape))
        return found
    evidence.claim, domain.search = fixed, search
_forge()
"""
FORGERIES = {
    # the verdict alone: nothing measured
    "verdict": "pass",
    # every drawn input taped, with a constant that TIS leaves alone
    "constant": 'tape.append({{"case": case, "raw": {{"loss": 1.0, "loss_tis": 1.0}}}})',
    # every drawn input taped, with text where the numbers go
    "garbled": 'tape.append({{"case": case, "raw": "fixed"}})',
    # ART's own outputs, honestly measured, but only those that pass
    "passing only": """raw = measure(case)
            if judge(case, raw) is None:
                tape.append({{"case": case, "raw": raw}})""",
    # ART's own TIS loss reported as the loss without TIS too (factor 1)
    "one loss for both": """tis = measure(case)["loss_tis"]
            tape.append({{"case": case, "raw": {{"loss": tis, "loss_tis": tis}}}})""",
}


def forged(forgery: str) -> str:
    """The code appended to loss.py for one of :data:`FORGERIES`."""
    return FORGE.format(forge=FORGERIES[forgery].format())


@pytest.mark.network
@pytest.mark.parametrize("version, want", [("0.5.20", "reproduced"), ("0.5.21", "fixed")])
def test_the_split_example_is_judged_by_artbot(place: Path, version: str, want: str) -> None:
    [result], said = run_apart(place, split_item7(place, version))
    confined_here(said)
    claim = result.claims[SPLIT_CLAIM]
    assert result.status.value == want and claim.verdict.value == want, result
    assert result.judged == {SPLIT_CLAIM: BY_ARTBOT} and result.seed is not None
    assert claim.domain is not None and claim.domain.seed == result.seed


@pytest.mark.network
@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_a_patch_that_fixes_nothing_cannot_write_its_own_verdict(place: Path, forgery: str) -> None:
    """Attack 4: the answer said "fixed" for a patch that fixed nothing but wrote the verdict.
    Whatever the patched code makes its process say, artbot judges what it measured."""
    [result], said = run_apart(place, split_item7(place, "0.5.20", forged(forgery)))
    confined_here(said)
    claim = result.claims[SPLIT_CLAIM]
    assert result.status is not CodeStatus.fixed and claim.verdict.value != "fixed", result
    assert result.judged == {SPLIT_CLAIM: BY_ARTBOT}
    if forgery in ("verdict", "passing only"):
        assert result.status is CodeStatus.could_not_run
        assert "inputs artbot drew (it said fixed)" in claim.detail
    else:
        assert result.status is CodeStatus.reproduced
        assert "the check's process said fixed; artbot's judgement" in claim.detail


@pytest.mark.network
def test_verify_code_says_its_seed_after_the_run_and_seed_repeats_it(place: Path) -> None:
    """The seed the inputs were drawn with is said once the run is over (never before: the
    check's process must not know it), and ``--seed N`` repeats the same inputs."""
    tree = split_item7(place, "0.5.21")
    verify = subprocess.run(
        [sys.executable, "-m", "artbot", "--root", str(place / "checkout"), "verify", "code",
         "--art-src", str(tree), "--seed", "12345"],
        env={**ENV, "HOME": str(place)}, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    assert verify.returncode == 0, verify.stderr[-2000:]
    said = verify.stderr.splitlines()
    if not any("ran confined" in line for line in said):
        pytest.skip(f"no confinement here: {verify.stderr[-300:]}")
    assert said[-1] == (
        "verify: artbot judged 1 claim from the check's outputs on inputs it drew (seed 12345)"
    )
    assert not any("12345" in line for line in said[:-1])
    # The same seed, the same inputs and verdict (here in-process, the tests' path).
    catalog = load_catalog(place / "checkout")
    [again] = verify_code(catalog, open_tree(tree, catalog.audit), seed=12345)
    claim = again.claims[SPLIT_CLAIM]
    assert again.seed == 12345 and claim.domain is not None and claim.domain.seed == 12345
    assert claim.verdict.value == "fixed" and claim.detail in verify.stdout


# The whole results document rewritten as it leaves the check's process: item 7 "fixed", and
# no claim (or one without its tape) for artbot to judge.
DROPPED = [
    "lambda d: d['results'][0].update(status='fixed', claims={}, tapes={})",
    "lambda d: [c.update(verdict='fixed') for c in d['results'][0]['claims'].values()]"
    " and d['results'][0].update(status='fixed', tapes={})",
]


@pytest.mark.network
@pytest.mark.parametrize("change", DROPPED)
def test_a_result_rewritten_to_fixed_without_its_outputs_could_not_run(
    place: Path, change: str
) -> None:
    """Attack 4, by the results document: a verdict with nothing measured behind it."""
    appended = REWRITE.format(change=change)
    [result], said = run_apart(place, split_item7(place, "0.5.20", appended))
    confined_here(said)
    assert result.status is CodeStatus.could_not_run, result
    assert "measured 0 of the" in result.detail and result.judged == {SPLIT_CLAIM: BY_ARTBOT}
