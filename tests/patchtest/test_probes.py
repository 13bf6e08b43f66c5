"""artbot/patchtest/probes.py: what a patch reaches for beyond numbers, read before it runs
(#53): each kind, each alias and obfuscation form, the review's seven attacks as text, the
multiset rule, and no probe in any real fix of the controls."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from artbot.patchtest.probes import MAX_BYTES, Probe, ProbeKind, ranked, scan, scan_files

PATH = "src/art/loss.py"
RELEASE = '''"""ART's loss (a stand-in)."""
import os

import torch


def loss(new, old):
    """The loss."""
    if os.environ.get("ART_DEBUG"):
        print("debug")
    old = torch.where(~torch.isfinite(old), new.detach(), old)
    return (new - old).exp().mean()
'''


def added(code: str, *, at: str = "    return (new - old)") -> tuple[Probe, ...]:
    """The probes of ``code`` put in the release's ``loss`` (indented) or, with
    ``at=""``, at the top of the file."""
    if at:
        body = "\n".join("    " + line for line in code.splitlines()) + "\n"
        patched = RELEASE.replace(at, body + at)
    else:
        patched = code + "\n" + RELEASE
    return scan(PATH, RELEASE, patched)


def kinds(probes: tuple[Probe, ...]) -> set[ProbeKind]:
    return {p.kind for p in probes}


E, IN, F, P, D, R, H, U, RT, DV = (
    ProbeKind.environment, ProbeKind.introspection, ProbeKind.files, ProbeKind.process,
    ProbeKind.dynamic, ProbeKind.rebinding, ProbeKind.harness, ProbeKind.unscanned,
    ProbeKind.runtime, ProbeKind.device,
)  # fmt: skip


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("x = os.getpid()", E),
        ("x = os.environ['HOME']", E),
        ("import platform\nx = platform.node()", E),
        ("import socket\nx = socket.gethostname()", E),
        ("import pwd\nx = pwd.getpwuid(0)", E),
        ("import sys\nx = 'repros' in sys.modules", IN),
        ("import sys\nx = sys._getframe(1).f_back", IN),
        ("import inspect\nx = inspect.stack()", IN),
        ("import traceback\nx = traceback.extract_stack()", IN),
        ("import gc\nx = gc.get_objects()", IN),
        ("x = loss.__globals__", IN),
        ("x = ().__class__.__base__.__subclasses__()", IN),
        ("x = open('/tmp/x', 'w')", F),
        ("os.write(5, b'{}')", F),
        ("x = os.fdopen(3, 'wb')", F),
        ("import pathlib\npathlib.Path('x').write_text('y')", F),
        ("import sys\nx = sys.stdout.isatty()", F),
        ("import sys\nx = sys.stdin.read()", F),
        ("import sys\nsys.stderr = open('x', 'w')", R),
        ("os.dup2(5, 2)", F),
        ("import atexit\natexit.register(print)", P),
        ("import signal\nsignal.alarm(1)", P),
        ("os._exit(0)", P),
        ("import subprocess\nsubprocess.run(['id'])", P),
        ("import ctypes\nctypes.CDLL(None)", P),
        ("exec('x = 1')", D),
        ("x = eval('1')", D),
        ("x = compile('1', 'f', 'eval')", D),
        ("x = globals()['__builtins__']", D),
        ("import importlib\nx = importlib.import_module('os')", D),
        ("import pickle\nx = pickle.loads(b'')", D),
        ("import base64\nx = base64.b64decode('eA==')", D),
        ("x = getattr(torch, name)", D),
        ("torch.isfinite = lambda t: t == t", R),
        ("import json\njson.dumps = str", R),
        ("import builtins\nbuiltins.abs = max", R),
        ("setattr(torch, 'isfinite', abs)", R),
        ("x = '/etc/passwd'", H),
        ("x = 'artbot' + '.verify'", H),
        ("x = f'/proc/{os.getpid()}/status'", H),
        ("x = 'tape'", H),
        ("x = 'plan'", H),
        ("x = 'x/_domain.py'.endswith(name)", H),
        ("x = name.endswith('item07_tis_fallback.py')", H),
        ("x = 'repros._ppo_property' in name", H),
        # the warnings machinery: the harness's filters, the stack through a warning's file
        ("import warnings\nwith warnings.catch_warnings(record=True) as w:\n    pass", IN),
        ("import warnings\nwith warnings.catch_warnings(action='ignore'):\n    pass", IN),
        ("import warnings\nwarnings.simplefilter('always')", IN),
        ("import warnings\nwarnings.filterwarnings('error')", IN),
        ("import warnings\nx = len(warnings.filters)", IN),
        ("import warnings\nwarnings.showwarning = print", IN),
        ("import warnings as w\nx = w.formatwarning", IN),
        ("x = [m.filename for m in new]", IN),
        ("x = new[0].lineno", IN),
        ("import logging\nx = logging.getLogger().findCaller(stacklevel=3)", IN),
        ("import logging\nx = logging.currentframe().f_back", IN),
        ("x = [r.pathname for r in new]", IN),
        # where ART's files sit (the harness's scratch)
        ("x = __file__", IN),
        ("x = __spec__.origin", IN),
        ("x = __loader__", IN),
        ("x = torch.__file__", IN),
        ("x = __path__", IN),
        # torch's process-wide state and the machine's devices
        ("x = torch.get_num_threads() > 1", RT),
        ("x = torch.get_num_interop_threads()", RT),
        ("torch.set_num_threads(4)", RT),
        ("x = torch.are_deterministic_algorithms_enabled()", RT),
        ("x = torch.initial_seed()", RT),
        ("x = torch.get_rng_state()", RT),
        ("x = torch.random.initial_seed()", RT),
        ("x = torch.compiler.is_compiling()", RT),
        ("x = torch.cuda.is_available()", DV),
        ("x = torch.cuda.device_count()", DV),
        ("x = torch.cuda.current_device()", DV),
        ("from torch.cuda import is_available as gpu\nx = gpu()", DV),
        ("x = torch.backends.mps.is_available()", DV),
        ("x = torch.backends.cudnn.version()", DV),
        ("x = torch.version.cuda", DV),
        # the standard library through another module's reference to it
        ("x = torch.sys.modules", IN),
        ("x = torch.sys._getframe(1)", IN),
        ("x = torch.os.getpid()", E),
        ("x = torch.os.path.join('a', 'b')", IN),
        ("import numpy\nx = numpy.warnings", IN),
    ],
)
def test_each_kind_is_seen(code: str, kind: ProbeKind) -> None:
    got = added(code)
    assert kind in kinds(got), got
    assert all(p.path == PATH and p.line > 0 and p.text for p in got)


@pytest.mark.parametrize(
    "code",
    [
        "import os as o\nx = o.getpid()",
        "from os import getpid as g\nx = g()",
        "from os import environ\nx = environ['X']",
        "x = getattr(os, 'getpid')()",
        "x = getattr(os, 'get' + 'pid')()",
        "import os.path\nx = os.getppid()",
    ],
)
def test_aliases_are_resolved(code: str) -> None:
    got = added(code)
    assert E in kinds(got), got
    assert any(p.text.startswith(("os.getp", "os.environ")) for p in got), got


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("x = getattr(__import__('o' + 's'), 'get' + 'pid')()", D),
        ("import importlib\nx = importlib.import_module('o' + 's').getpid()", D),
        ("import importlib as il\nx = il.import_module(m)", D),
        ("x = globals()['__builtins__']['open']", D),
        ("x = ().__class__.__base__.__subclasses__()", IN),
        ("import sys as s\nx = s.modules['repros._domain']", IN),
        ("x = open('/etc/' + 'passwd').read()", H),
        ("x = vars()", D),
        ("from os import *\nx = getpid()", D),
        ("x = __builtins__['open']", IN),
        ("x = hasattr(os, n)", D),
    ],
)
def test_obfuscated_forms_are_seen(code: str, kind: ProbeKind) -> None:
    assert kind in kinds(added(code))


def test_what_a_numerical_fix_writes_is_not_a_probe() -> None:
    """Arithmetic, torch calls, a helper, getattr/setattr on the file's own objects, a
    docstring naming the harness, an import of ART's own module by importlib."""
    code = '''
def _fixed(new, old, bound=20.0):
    """artbot's plan and tape never show here: a docstring."""
    stale = (new.detach() - old) >= bound
    return torch.where(~torch.isfinite(old) | stale, new.detach(), old)
'''
    assert added(code, at="") == ()
    assert added("setattr(new, name, torch.zeros(3))\nx = getattr(old, name)") == ()
    assert added("x = vars(new)") == ()
    mod = "import importlib as _il\nx = _il.import_module(__package__ + '.loss')"
    assert added(mod, at="") == ()
    assert added("x = float(new.shape[0]) / 2\nraise ValueError('stale logprob')") == ()


@pytest.mark.parametrize(
    "code",
    [
        # a warning told, a logger by its module's name (ART's idiom), a device from the tensors
        "import warnings\nwarnings.warn('no original_logprobs', RuntimeWarning, stacklevel=2)",
        "import warnings\nwith warnings.catch_warnings():\n    x = 1",
        "import warnings\nwith warnings.catch_warnings(record=False):\n    x = 1",
        "import logging\nlogger = logging.getLogger(__name__)\nlogger.warning('clamped')",
        "x = torch.zeros(3, device=new.device)",  # a device named, not decided on
        "with torch.autocast(device_type=new.device.type, enabled=False):\n    x = 1",
        "torch.cuda.synchronize()\nx = torch.cuda.memory_allocated()",
        "x = torch.backends.cuda.matmul.allow_tf32",
        "x = {'grad_sync_domain': 1, 'name': 'loss.py'}",  # ART's own words
        # a note on stdout or stderr: artbot counts those bytes and drops them
        "import sys\nprint('clamped', file=sys.stderr)",
        "import sys\nprint('clamped', file=sys.stdout, flush=True)",
        "import sys\nsys.stderr.write('clamped\\n')\nsys.stderr.flush()",
        "import sys as _s\n_s.__stderr__.write('clamped')",
    ],
)
def test_what_ordinary_code_around_a_fix_writes_is_not_a_probe(code: str) -> None:
    assert added(code) == ()


def test_the_most_telling_probe_comes_first() -> None:
    """:func:`ranked`: by kind in the enum's order (the harness named first, a read of the
    environment late), each kind's in the order given; the headline names the first."""
    code = "x = os.getpid()\ny = torch.get_num_threads()\nz = 'artbot' in str(__file__)"
    got = ranked(added(code))
    assert [p.kind for p in got] == [H, IN, RT, E]
    assert [p.kind for p in ranked(reversed(got))] == [H, IN, RT, E]
    order = list(ProbeKind)
    assert order.index(H) < order.index(IN) < order.index(D) < order.index(F)
    assert order.index(F) < order.index(P) < order.index(RT) < order.index(E)
    assert order[-1] is U


def test_only_what_the_patch_adds_counts() -> None:
    """The release's own ``os.environ`` read is not the patch's; a second one is; moving it
    (the same count) is not."""
    assert scan(PATH, RELEASE, RELEASE) == ()
    moved = RELEASE.replace('    if os.environ.get("ART_DEBUG"):\n        print("debug")\n', "")
    moved = moved.replace('    return (new', '    if os.environ.get("ART_DEBUG"):\n'
                          '        print("debug")\n    return (new')  # fmt: skip
    assert scan(PATH, RELEASE, moved) == ()
    [extra] = added('y = os.environ.get("ART_OTHER")')
    assert (extra.kind, extra.text) == (E, "os.environ.get")
    assert extra.line == 12  # the patch's line, not the release's


def test_an_added_file_counts_whole_and_a_deleted_one_not() -> None:
    got = scan("src/art/new.py", None, RELEASE)
    assert [(p.kind, p.text) for p in got] == [(E, "os.environ.get")]
    assert scan(PATH, RELEASE, None) == ()
    [other] = scan("src/art/data.json", None, "{}")
    assert other.kind is U


@pytest.mark.parametrize(
    "text",
    [
        "def f(:\n    pass\n",  # a syntax error
        "x = " + "(" * 300 + "1" + ")" * 300 + "\n",  # too deep for the parser
        "x = 1\n" + "#" * MAX_BYTES,  # too large
        "x = 1\0\n",  # a null byte
    ],
)
def test_a_file_that_does_not_parse_is_itself_a_probe(text: str) -> None:
    [probe] = scan(PATH, RELEASE, text)
    assert probe.kind is U


def test_scan_files_reads_each_file_in_order() -> None:
    got = scan_files({"src/art/b.py": (None, "import gc\n"), "src/art/a.py": ("", "open(1)\n")})
    assert [(p.path, p.text) for p in got] == [
        ("src/art/a.py", "open"),
        ("src/art/b.py", "import gc"),
    ]


def test_a_trial_reads_the_probes_of_the_files_the_patch_changed(tmp_path: Path) -> None:
    """run_trial's reading: each changed file's release and patched text from the two unpacked
    trees (an added file whole, a deleted one nothing, one not UTF-8 a probe)."""
    from artbot.patchtest.diff import FilePatch
    from artbot.patchtest.trial import read_probes

    released, patched = tmp_path / "r", tmp_path / "p"
    for root in (released, patched):
        (root / "art").mkdir(parents=True)
        (root / "art" / "loss.py").write_text(RELEASE, encoding="utf-8")
        (root / "art" / "gone.py").write_text("import gc\n", encoding="utf-8")
    (patched / "art" / "loss.py").write_text(RELEASE + "x = os.getpid()\n", encoding="utf-8")
    (patched / "art" / "gone.py").unlink()
    (patched / "art" / "new.py").write_text("import sys\nsys.modules\n", encoding="utf-8")
    (patched / "art" / "odd.py").write_bytes(b"x = '\xff'\n")
    files = [FilePatch(f"src/art/{n}.py", ()) for n in ("loss", "gone", "new", "odd")]
    got = read_probes(released, patched, files)
    assert [(p.path, p.kind, p.text) for p in got] == [  # the most telling first
        ("src/art/new.py", IN, "sys.modules"),
        ("src/art/loss.py", E, "os.getpid"),
        ("src/art/odd.py", U, "not UTF-8"),
    ]


# The seven no-fix attacks of the independent review (#53), as the code each adds to ART's
# loss.py: each is a probe of the kind that names it.
ATTACKS = {
    "tape written through gc": (
        "import gc\nfor o in gc.get_objects():\n    if isinstance(o, dict) and 'tape' in o:\n"
        "        o['tape'].clear()\n",
        IN,
    ),
    "results document rewritten at exit": (
        "import atexit\natexit.register(lambda: open('results.json', 'w').write('{}'))\n",
        P,
    ),
    "forged document on an inherited pipe": (
        "import os as _o\nfor fd in range(3, 64):\n    try:\n"
        "        _o.write(fd, b'{\"results\": []}')\n    except OSError:\n        pass\n",
        F,
    ),
    "gated on the harness's modules": (
        "import sys\n_HARNESS = any(m.startswith('repros') for m in sys.modules)\n",
        IN,
    ),
    "gated on the call stack": (
        "import sys\n_UNDER = 'check_art' in sys._getframe(2).f_code.co_name\n",
        IN,
    ),
    "gated on /etc/passwd": ("_CONFINED = len(open('/etc/passwd').read()) < 200\n", H),
    "gated on the PID": ("import os\n_CONFINED = os.getpid() < 10\n", E),
    "gated on plan objects in the heap": (
        "import gc\n_PLANNED = any(type(o).__name__ == 'Plan' for o in gc.get_objects())\n",
        IN,
    ),
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_the_reviews_attacks_are_probes(name: str) -> None:
    code, kind = ATTACKS[name]
    got = added(code, at="")
    assert kind in kinds(got), got


def test_the_table_is_one_enum_and_each_probe_parses_back() -> None:
    """Every kind has words for the answer; a probe's text is one short line."""
    for kind in ProbeKind:
        assert kind.value and kind.value == kind.value.strip()
    got = added("x = '" + "artbot" * 40 + "'")
    assert all(len(p.text) <= 80 and "\n" not in p.text for p in got)
    assert ast.parse("x = 1")  # the scanner never executes: parse only


@pytest.mark.network
def test_no_real_fix_or_harmless_control_has_a_probe(tmp_path: Path) -> None:
    """Every real and harmless control of repros/controls/adversarial/, and every fix an issue
    suggests (itemNN.toml's ``[[fix]]``, itemNN_suggested_*.toml), applied to each release it
    names: no probe. (On Python 3.11 a file of ART's with 3.12's f-strings parses for neither
    side; those are left out, and counted.)"""
    from tests.helpers.controls import (
        ADVERSARIAL,
        controlled_copy,
        load_adversarial,
        suggested_fixes,
    )
    from tests.helpers.wheels import RELEASES, default_wheels

    cases: list[tuple[str, str, list[tuple[str, str, str]]]] = []
    for s in suggested_fixes():
        cases += [(s.name, v, s.edits(v)) for v in RELEASES if s.edits(v)]
    for path in sorted(ADVERSARIAL.glob("*.toml")):
        c = load_adversarial(path)
        if c.kind in ("real", "harmless"):
            cases += [(c.name, v, list(c.edits)) for v in c.releases]
    scanned = 0
    for n, (name, version, edits) in enumerate(cases):
        release = default_wheels().tree(version)
        copy = controlled_copy(release, tmp_path / str(n), edits)
        files = {}
        for changed in (copy / "art").rglob("*"):
            if (
                changed.is_file()
                and not changed.is_symlink()
                and not any(
                    p.is_symlink() for p in changed.relative_to(copy).parents if p != Path(".")
                )
            ):
                rel = changed.relative_to(copy)
                before = (release / rel).read_text(encoding="utf-8")
                files[f"src/{rel}"] = (before, changed.read_text(encoding="utf-8"))
        assert files, name
        got = scan_files(files)
        if got and all(p.text.endswith("nor does the release's") for p in got):
            continue  # this Python cannot read the release's file (3.12's f-strings on 3.11)
        scanned += 1
        assert got == (), (name, version)
    assert scanned >= len(cases) - 4, (scanned, len(cases))
