"""#53: the independent review's no-fix patches that came out "fixed" without touching a verdict,
run for real through the trial and ``artbot test``: each is answered "not vouched" (or not
fixed), with the probe that names it. Item 801 on the release the patch-testing tests read
(its fix, tests/fixtures/patchtest/item801_fix.diff, is what the gated patches apply only
under artbot's harness). The other attacks are checked as text in test_probes.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.patchtest.answer import render_trial
from artbot.patchtest.probes import ProbeKind
from artbot.verify.code import CodeStatus
from tests.helpers.answering import NO_TOKEN, REPO, trial
from tests.helpers.patchdiff import RELEASE, make_diff
from tests.helpers.wheels import default_wheels

pytestmark = pytest.mark.network

LOSS = "src/art/loss.py"
GUARD = "        ~torch.isfinite(old_logprobs),\n"
# The item's fix (tests/fixtures/patchtest/item801_fix.diff), as a condition on the harness.
FIXED = (
    "        ~torch.isfinite(old_logprobs) | ((new_logprobs.detach() - old_logprobs >= "
    "(10.0 if torch.float16 in (new_logprobs.dtype, old_logprobs.dtype) else 20.0)) & {gate}),\n"
)


def release_loss() -> str:
    return (default_wheels().package(RELEASE) / "loss.py").read_text(encoding="utf-8")


def gated(gate: str, helper: str) -> str:
    """A diff of loss.py applying the item's fix only where ``gate`` (code ``helper`` at the
    top of the file defines) holds."""
    source = release_loss()
    assert source.count(GUARD) == 1
    patched = source.replace(GUARD, FIXED.format(gate=gate))
    head, sep, rest = patched.partition("\nclass ")
    return make_diff(LOSS, source, head + "\n" + helper + sep + rest)


def assert_not_vouched(got: object, kind: ProbeKind, text: str) -> str:
    from artbot.patchtest.trial import Trial

    assert isinstance(got, Trial)
    assert not got.vouched
    assert any(p.kind is kind and text in p.text for p in got.probes), got.probes
    answer = render_trial(got)
    assert "**fixed" not in answer and text in answer
    if got.after.status is CodeStatus.fixed:
        assert "**not vouched: fixed on artbot's inputs, but the patch" in answer
    return answer


def test_a_forged_document_written_to_the_pipe_at_import_is_not_vouched_for() -> None:
    """Attack (a): at import, the patch writes a results document saying "fixed" to every
    descriptor it inherited (the results pipe among them)."""
    source = release_loss()
    forge = (
        "import json as _json, os as _os\n"
        "_DOC = _json.dumps({'results': [{'item': 801, 'status': 'fixed'}]}).encode()\n"
        "for _fd in range(3, 64):\n"
        "    try:\n"
        "        _os.write(_fd, _DOC)\n"
        "    except OSError:\n"
        "        pass\n"
    )
    head, sep, rest = source.partition("\nclass ")
    got = trial(801, make_diff(LOSS, source, head + "\n" + forge + sep + rest))
    assert_not_vouched(got, ProbeKind.files, "os.write")


def test_a_fix_gated_on_artbots_modules_is_not_vouched_for_and_artbot_test_exits_1(
    tmp_path: Path,
) -> None:
    """Attack (b): the fix acts only where ``sys.modules`` holds artbot's modules (the check's
    process); ``artbot test`` says so and exits 1, not 0."""
    helper = (
        "import sys as _sys\n\n\n"
        "def _harness():\n"
        "    return torch.tensor(any(m.split('.')[0] == 'artbot' for m in _sys.modules))\n"
    )
    diff = tmp_path / "gated.diff"
    diff.write_text(gated("_harness()", helper), encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["--root", str(REPO), "test", "--item", "801", "--patch", str(diff)], env=NO_TOKEN
    )
    assert result.exit_code == 1, result.output
    assert "sys.modules" in result.output
    assert ": fixed over" not in result.output
    said = "not vouched: fixed on artbot's inputs, but the patch inspects the running program"
    assert said in result.output or "reproduced" in result.output, result.output


def test_a_fix_gated_on_plan_objects_in_the_heap_is_not_vouched_for() -> None:
    """Attack (b): the fix acts only where the heap holds artbot's channel (its ``tape``),
    found once with ``gc``."""
    helper = (
        "import gc as _gc\n"
        "_SEEN = []\n\n\n"
        "def _harness():\n"
        "    if not _SEEN:\n"
        "        _SEEN.append(False)\n"
        "        for o in _gc.get_objects():\n"
        "            try:\n"
        "                d = object.__getattribute__(o, '__dict__')\n"
        "            except Exception:\n"
        "                continue\n"
        "            if isinstance(d, dict) and 'tape' in d and 'plan' in d:\n"
        "                _SEEN[0] = True\n"
        "                break\n"
        "    return torch.tensor(_SEEN[0])\n"
    )
    got = trial(801, gated("_harness()", helper))
    assert_not_vouched(got, ProbeKind.introspection, "gc.get_objects")
