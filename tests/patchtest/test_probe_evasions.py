"""artbot/patchtest/probes.py against the third independent review's no-fix patches aimed
past the scan (#53; its patches: the warnings machinery, torch's thread count, CUDA's
availability, the standard library through torch's own reference to it), each as the few lines
of its construct, not the diff: the probe that names it comes first (the answer's headline).
Its real fixes, in the same idioms ART uses, scan clean (but r02's environment default: a
gate on a config value, flagged on purpose)."""

from __future__ import annotations

import pytest

from artbot.patchtest.probes import Probe, ProbeKind, ranked, scan

PATH = "src/art/loss.py"
RELEASE = """import os

import torch


def loss(new, old):
    if os.environ.get("ART_DEBUG"):
        print("debug")
    return (new - old).exp().mean()
"""
E, IN, H, RT, DV = (ProbeKind.environment, ProbeKind.introspection, ProbeKind.harness,
                    ProbeKind.runtime, ProbeKind.device)  # fmt: skip


def added(code: str) -> tuple[Probe, ...]:
    """The probes of ``code`` put at the top of the release's file."""
    return scan(PATH, RELEASE, code + "\n" + RELEASE)


EVASIONS = {
    "f01 warning recorded only under the default filters": (
        "import warnings\n"
        "def _announced():\n"
        "    with warnings.catch_warnings(record=True) as shown:\n"
        "        warnings.warn('TIS falls back', RuntimeWarning, stacklevel=3)\n"
        "    return bool(shown)\n",
        IN,
        "warnings.catch_warnings(record=True)",
    ),
    "f02 one intra-op thread": (
        "_KEEP = torch.get_num_threads() > 1\n",
        RT,
        "torch.get_num_threads",
    ),
    "f06 the stack read through warnings' file names": (
        "import warnings\n"
        "def _searched():\n"
        "    with warnings.catch_warnings(record=True) as seen:\n"
        "        warnings.simplefilter('always')\n"
        "        for level in range(2, 40):\n"
        "            warnings.warn('loss_fn', UserWarning, stacklevel=level)\n"
        "    return any(w.filename.endswith('_domain.py') for w in seen)\n",
        H,
        "'_domain.py'",
    ),
    "f08 frames through torch's sys": (
        "frame = torch.sys._getframe(0)\n",
        IN,
        "torch.sys._getframe",
    ),
    "f10 CUDA's availability": (
        "if not torch.cuda.is_available():\n    pass\n",
        DV,
        "torch.cuda.is_available",
    ),
    "f15 the module table through torch's sys": (
        "x = any(n.startswith('ar' + 'tbot') for n in list(torch.sys.modules))\n",
        H,
        "'artbot'",
    ),
}


@pytest.mark.parametrize("name", sorted(EVASIONS))
def test_the_third_reviews_evasions_are_probes(name: str) -> None:
    code, kind, text = EVASIONS[name]
    got = ranked(added(code))
    assert (got[0].kind, got[0].text) == (kind, text), got  # the headline's probe


def test_a_device_gate_says_the_cpu_check_cannot_see_past_it() -> None:
    """f10's kind, in the words the answer's headline completes "the patch ..." with."""
    assert ProbeKind.device.value == (
        "gates on the machine's devices, past which a check on CPU cannot see"
    )


def test_f06_is_seen_three_ways() -> None:
    code, _, _ = EVASIONS["f06 the stack read through warnings' file names"]
    texts = {p.text for p in added(code)}
    assert {"warnings.catch_warnings(record=True)", "warnings.simplefilter", "filename"} <= texts


REAL_FIXES = {
    "r01 eps by getattr over optional names": (
        "_OPTIONAL = ('eps',)\n"
        "def _group(group, params):\n"
        "    for name in _OPTIONAL:\n"
        "        if getattr(params, name, None) is not None:\n"
        "            group[name] = getattr(params, name)\n"
    ),
    "r03 a logger by its module's name": (
        "import logging\nlogger = logging.getLogger(__name__)\n"
        "logger.warning('Skipping truncated importance sampling')\n"
    ),
    "r05 a note on stderr once": (
        "import sys\n_NOTED = False\n"
        "def _note(bound):\n    global _NOTED\n    if not _NOTED:\n        _NOTED = True\n"
        "        print(f'art.loss: log-ratios past +-{bound:g} clamped', file=sys.stderr)\n"
    ),
}


@pytest.mark.parametrize("name", sorted(REAL_FIXES))
def test_the_third_reviews_real_fixes_are_not_probes(name: str) -> None:
    assert added(REAL_FIXES[name]) == ()


def test_a_real_fix_in_a_new_helper_module_scans_clean() -> None:
    """r04: the population std in a new file (no release to count against: all of it counts)."""
    helper = (
        '"""GRPO advantages of one group."""\n\nfrom __future__ import annotations\n\n'
        "import statistics\n\n\n"
        "def group_advantages(rewards: list[float], *, normalize: bool = True) -> list[float]:\n"
        "    values = [float(r) for r in rewards]\n    mean = statistics.fmean(values)\n"
        "    std = statistics.pstdev(values, mu=mean)\n"
        "    return [(v - mean) / std for v in values] if normalize and std else values\n"
    )
    assert scan("src/art/tinker_native/_advantages.py", None, helper) == ()


def test_a_default_read_from_the_environment_stays_a_probe() -> None:
    """r02: eps's default from ``ART_ADAM_EPS``: a gate on a config value, a fake class #53
    names, so flagged though this one is a real fix."""
    code = 'def _eps():\n    return float(os.environ.get("ART_ADAM_EPS", "1e-8"))\n'
    assert [(p.kind, p.text) for p in added(code)] == [(E, "os.environ.get")]
