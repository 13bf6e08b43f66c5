"""The probe scan's table (#53): each kind of use a numerical fix to ART never needs, in the
order of how much it says, and the names, attributes and strings of each (read by
:mod:`.probes`, which resolves imports and aliases and counts only what a patch adds).
"""

from __future__ import annotations

import enum
import re
import sys
from collections.abc import Mapping


class ProbeKind(enum.Enum):
    """What a probe reaches for; the value completes "the patch ...". Declared in the order of
    how much one use says about an attack (the harness named outright first, a read of the
    environment ART itself does last): the answer's headline names the first (:func:`ranked`)."""

    harness = "names the harness or the machine"
    introspection = "inspects the running program"
    dynamic = "runs code built at run time"
    rebinding = "rebinds a name outside ART"
    files = "opens files or descriptors"
    process = "controls the process"
    device = "gates on the machine's devices, past which a check on CPU cannot see"
    clock = "reads the clock, past which a check that runs for seconds cannot see"
    runtime = "reads or sets torch's process-wide state"
    environment = "reads the process's environment"
    unscanned = "has a file artbot cannot scan"


E, IN, F, P, D = (ProbeKind.environment, ProbeKind.introspection, ProbeKind.files,
                  ProbeKind.process, ProbeKind.dynamic)  # fmt: skip
DV, RT, CK = ProbeKind.device, ProbeKind.runtime, ProbeKind.clock

# Dotted names (after imports are resolved): the name itself or anything under it is a probe.
# Measured (Python 3.12): no real fix, harmless or suggested control of repros/controls/ uses
# one. ART's own changes do, and stay flagged, each for its reason:
# - 0.5.21 adds `os.environ` reads (megatron/lora.py, trainer_rank/_impl.py): a new environment
#   read is a gate on a config value, a fake class #53 names;
# - 0.5.21 adds `gc.collect` (megatron/lora.py), `threading`, `traceback`, `weakref`, `__dict__`
#   (trainer_rank/_impl.py), and sockets, files and threads across src/art: ART's
#   infrastructure, never a numerical fix; a patch that carries it is read beside the diff;
# - 0.5.21 adds device queries (`torch.cuda.mem_get_info`, `torch.cuda.is_initialized`,
#   `torch.version.cuda`, `.is_cuda`, `device.type == "cpu"`), `time.perf_counter` and
#   `torch.compiler.is_compiling` to audited files: memory planning, timing and compilation,
#   flagged as a gate a CPU check (or a check's few seconds) cannot see past would be.
NAMES: Mapping[str, ProbeKind] = {
    "os.environ": E, "os.environb": E, "os.getenv": E, "os.getenvb": E, "os.putenv": E,
    "os.getpid": E, "os.getppid": E, "os.getpgid": E, "os.getpgrp": E, "os.getsid": E,
    "os.getuid": E, "os.geteuid": E, "os.getgid": E, "os.getegid": E, "os.getlogin": E,
    "os.getgroups": E, "os.uname": E, "os.cpu_count": E, "os.getcwd": E, "os.listdir": E,
    "os.scandir": E, "os.stat": E, "os.lstat": E, "os.access": E, "os.path.exists": E,
    "os.path.isfile": E, "os.path.isdir": E, "os.sched_getaffinity": E, "os.getloadavg": E,
    "platform": E, "socket": E, "pwd": E, "grp": E, "resource": E, "getpass": E, "sysconfig": E,
    "sys.argv": E, "sys.orig_argv": E, "sys.executable": E, "sys.path": E, "sys.flags": E,
    "sys.prefix": E, "sys.base_prefix": E, "sys.platform": E,
    "sys.modules": IN, "sys._getframe": IN, "sys.exc_info": IN, "sys.exception": IN,
    "sys.settrace": IN, "sys.setprofile": IN, "sys.gettrace": IN, "sys.audit": IN,
    "sys.addaudithook": IN, "sys.meta_path": IN, "sys.path_hooks": IN, "sys.monitoring": IN,
    "sys._current_frames": IN, "sys.getrefcount": IN, "sys.getsizeof": IN,
    "inspect": IN, "traceback": IN, "gc": IN, "weakref": IN, "dis": IN, "types.FrameType": IN,
    "types.CodeType": IN, "types.FunctionType": IN, "types.ModuleType": IN, "tracemalloc": IN,
    "faulthandler": IN, "site": IN, "builtins": IN, "__builtins__": IN,
    # where this module's file sits (the harness's scratch), not its name (``__name__`` is
    # ART's logging idiom)
    "__file__": IN, "__spec__": IN, "__loader__": IN, "__path__": IN, "__cached__": IN,
    # the warnings machinery as a probe of the harness's filters and, through a recorded
    # warning's file name, of the call stack without frames (``warnings.warn`` alone is none;
    # ``catch_warnings`` with ``record``, ``module`` or ``action``: :data:`WARNINGS_RECORDER`)
    "warnings.simplefilter": IN, "warnings.filterwarnings": IN, "warnings.resetwarnings": IN,
    "warnings.filters": IN, "warnings.showwarning": IN, "warnings.formatwarning": IN,
    "warnings._showwarnmsg": IN, "warnings._formatwarnmsg": IN, "warnings.defaultaction": IN,
    "warnings.onceregistry": IN, "warnings._filters_mutated": IN, "warnings.WarningMessage": IN,
    "logging.captureWarnings": IN, "logging.currentframe": IN, "sys.warnoptions": E,
    # torch's process-wide state: a gate on it acts on how the process is set up, not on the
    # tensors (the check sets one thread: repros/_domain.py)
    "torch.get_num_threads": RT, "torch.get_num_interop_threads": RT,
    "torch.set_num_threads": RT, "torch.set_num_interop_threads": RT,
    "torch.are_deterministic_algorithms_enabled": RT, "torch.use_deterministic_algorithms": RT,
    "torch.is_deterministic_algorithms_warn_only_enabled": RT,
    "torch.get_deterministic_debug_mode": RT, "torch.set_deterministic_debug_mode": RT,
    "torch.initial_seed": RT, "torch.seed": RT, "torch.manual_seed": RT, "torch.random": RT,
    "torch.get_rng_state": RT, "torch.set_rng_state": RT, "torch.default_generator": RT,
    "torch.cuda.initial_seed": RT, "torch.cuda.seed": RT, "torch.cuda.seed_all": RT,
    "torch.cuda.manual_seed": RT, "torch.cuda.manual_seed_all": RT,
    "torch.cuda.get_rng_state": RT, "torch.cuda.get_rng_state_all": RT, "torch.__config__": RT,
    "torch._C": RT, "torch.compiler.is_compiling": RT, "torch.compiler.is_dynamo_compiling": RT,
    "torch._dynamo.is_compiling": RT, "torch.jit.is_scripting": RT, "torch.jit.is_tracing": RT,
    # which devices the machine has: the check runs on CPU (``torch.backends.X.is_available``
    # and ``.version``: :data:`DEVICE_BACKEND_CALLS`)
    "torch.cuda.is_available": DV, "torch.cuda.device_count": DV,
    "torch.cuda.current_device": DV, "torch.cuda.is_initialized": DV,
    "torch.cuda.get_device_name": DV, "torch.cuda.get_device_capability": DV,
    "torch.cuda.get_device_properties": DV, "torch.cuda.is_bf16_supported": DV,
    "torch.cuda.mem_get_info": DV, "torch.cuda.get_arch_list": DV, "torch.version.cuda": DV,
    "torch.version.hip": DV, "torch.xpu.is_available": DV, "torch.xpu.device_count": DV,
    "torch.mps.is_available": DV, "torch.mps.device_count": DV, "torch.accelerator": DV,
    "torch.cpu.is_available": DV, "torch.cpu.device_count": DV, "torch.cpu.current_device": DV,
    # the clock: a gate on time (a guard that holds for the first minutes after import) acts
    # only where a check that runs for seconds never looks
    "time.time": CK, "time.time_ns": CK, "time.monotonic": CK, "time.monotonic_ns": CK,
    "time.perf_counter": CK, "time.perf_counter_ns": CK, "time.process_time": CK,
    "time.process_time_ns": CK, "time.thread_time": CK, "time.thread_time_ns": CK,
    "time.clock_gettime": CK, "time.clock_gettime_ns": CK, "time.localtime": CK,
    "time.gmtime": CK, "time.ctime": CK, "time.asctime": CK, "time.strftime": CK,
    "datetime.datetime.now": CK, "datetime.datetime.utcnow": CK, "datetime.datetime.today": CK,
    "datetime.date.today": CK, "timeit": CK, "os.times": CK,
    "open": F, "io": F, "os.open": F, "os.read": F, "os.write": F, "os.dup": F, "os.dup2": F,
    "os.fdopen": F, "os.pipe": F, "os.pipe2": F, "os.close": F, "os.closerange": F,
    "os.lseek": F, "os.sendfile": F, "os.truncate": F, "os.ftruncate": F, "os.remove": F,
    "os.unlink": F, "os.rename": F, "os.replace": F, "os.mkdir": F, "os.makedirs": F,
    "os.symlink": F, "os.link": F, "os.chmod": F, "os.set_inheritable": F, "os.memfd_create": F,
    "os.fsync": F, "os.readlink": F, "os.walk": F, "pathlib": F, "shutil": F, "tempfile": F,
    "fcntl": F, "select": F, "selectors": F, "sys.stdout": F, "sys.stderr": F, "sys.stdin": F,
    "sys.__stdout__": F, "sys.__stderr__": F, "sys.__stdin__": F, "fileinput": F, "glob": F,
    "atexit": P, "signal": P, "os._exit": P, "os.abort": P, "os.kill": P, "os.killpg": P,
    "os.fork": P, "os.forkpty": P, "os.register_at_fork": P, "os.system": P, "os.popen": P,
    "os.spawnl": P, "os.spawnv": P, "os.posix_spawn": P, "os.execv": P, "os.execve": P,
    "os.execl": P, "os.execvp": P, "os.setsid": P, "os.nice": P, "os.wait": P,
    "os.waitpid": P, "sys.exit": P, "sys.setrecursionlimit": P, "sys.excepthook": P,
    "sys.unraisablehook": P, "sys.displayhook": P, "subprocess": P, "multiprocessing": P,
    "threading": P, "_thread": P, "concurrent": P, "asyncio.subprocess": P, "ctypes": P,
    "cffi": P, "mmap": P, "pty": P, "time.sleep": P, "exit": P, "quit": P,
    "exec": D, "eval": D, "compile": D, "__import__": D, "importlib": D, "imp": D,
    "runpy": D, "marshal": D, "pickle": D, "copyreg": D, "codecs": D, "base64": D,
    "binascii": D, "zlib": D, "lzma": D, "bz2": D, "gzip": D, "zipimport": D, "code": D,
    "codeop": D, "globals": D, "locals": D, "breakpoint": D, "pdb": D,
    "torch.load": D, "torch.jit.load": D, "numpy.load": D,
}  # fmt: skip
# Attributes (also named by ``getattr``, ``operator.attrgetter``): the interpreter's own objects
# (frames, code, a function's globals), and what tells the harness's stand-ins and synthetic
# package from ART's real ones (``type(layer).__module__``, ``type(art).__name__``; the bare
# module-level ``__name__`` is ART's logging idiom and no probe); a tensor's device kind.
ATTRIBUTES: Mapping[str, ProbeKind] = {
    **{name: DV for name in ("is_cuda", "is_cpu", "is_mps", "is_xpu")},
    **{name: IN for name in (
        "f_back", "f_locals", "f_globals", "f_builtins", "f_code", "f_lineno", "f_trace",
        "tb_frame", "tb_next", "gi_frame", "gi_code", "cr_frame", "ag_frame", "__globals__",
        "__code__", "__closure__", "__subclasses__", "__builtins__", "__dict__", "__base__",
        "__bases__", "__mro__", "__getattribute__", "__reduce__", "__reduce_ex__", "co_code",
        "co_consts", "__loader__", "__spec__", "__traceback__", "__self__", "__func__",
        "__doc__", "__file__", "__path__", "__cached__",
        # a recorded warning's or a log record's place in the call stack
        "filename", "lineno", "pathname", "funcName", "findCaller", "stack_info",
        "__name__", "__module__", "__qualname__",
    )},
}  # fmt: skip
# A device kind written where the code decides (a comparison, an ``if``'s test), and a device's
# ``.type`` there (``x.device.type == "cuda"``): a gate on the device a check on CPU never takes.
DEVICE_KINDS = frozenset(("cuda", "cpu", "mps", "xpu", "hip", "hpu", "npu"))
# Calls that build a getter of a name (``operator.methodcaller("getpid")(os)``: ``os.getpid``),
# and a fold of ``getattr`` over names (``functools.reduce(getattr, ["path", "exists"], os)``).
GETTERS = ("operator.attrgetter", "operator.methodcaller",
           "_operator.attrgetter", "_operator.methodcaller")  # fmt: skip
REDUCERS = ("functools.reduce", "_functools.reduce")
# A lock is no process control (a cache shared by training threads); starting threads still is.
THREAD_LOCKS = frozenset(("threading.Lock", "threading.RLock"))
# Calls that import a module by its name: one of ART's, named by a literal (or ``__package__``
# and a literal, as the controls' real fix item01_real_patch_imported_with_importlib does), is
# an import; any other is a probe (``importlib``).
IMPORTERS = ("importlib.import_module",)
# Built-in names that, called with a name not written literally, can reach anything.
NAME_BY_VALUE = ("getattr", "setattr", "delattr", "hasattr")
# Strings that name the harness or the machine: a substring anywhere in a literal (case
# ignored), a name of the repros' own modules where a name starts (``w.filename.endswith(
# "_domain.py")``, not ART's ``"grad_sync_domain"``), and literals exactly one of these words.
HARNESS_WORDS = ("artbot", "repros", "oracle", "check_art", "/etc/", "/proc/", "/sys/",
                 "/dev/", "passwd", "pytest", "conftest", "sandbox", "bwrap",
                 "seccomp")  # fmt: skip
HARNESS_MODULES = re.compile(r"(?<![a-z0-9])(_domain|_[a-z]+_property|test_item\d|item\d+_)")
HARNESS_LITERALS = ("plan", "tape", "seed", "judge", "verdict",
                    "measure", "claims", "reproduced", "fixed", "out_fd")  # fmt: skip
# ``warnings.catch_warnings`` is a probe with one of these keywords (``record=True``: what
# was shown under the harness's filters, and where from; ``module``, ``action``: the filters).
WARNINGS_RECORDER = ("warnings.catch_warnings", ("record", "module", "action"))
# Rebinding counts in the modules artbot's check and regression-test processes rely on to
# measure and report (what artbot/verify/* and repros/ import: the standard library, torch,
# pytest, pydantic_core; numpy under torch; the repros' own ``_``-named modules and artbot), not
# in a third-party library ART patches by design (0.5.21's own fix for item 1 sets an attribute
# on Transformer Engine's kernel; transformers, unsloth, peft, vllm likewise).
REBINDING_GUARDED = frozenset(sys.stdlib_module_names) | frozenset(
    ("torch", "numpy", "pytest", "_pytest", "pluggy", "pydantic", "pydantic_core", "artbot",
     "repros", "conftest"))  # fmt: skip
# Modules of the standard library a patch can reach through another module's reference to
# them (``torch.sys``, ``torch.os``, ``numpy.warnings``): read as if named directly, and a probe
# of introspection where nothing more is known (``torch.os.path.join``).
REROOTED = frozenset(("sys", "os", "builtins", "inspect", "gc", "warnings", "importlib",
                      "subprocess", "ctypes", "threading", "traceback", "atexit", "pickle",
                      "marshal", "tempfile", "shutil", "pathlib", "weakref"))  # fmt: skip
# ``torch.backends.X.<call>``: which backends this build and machine have.
DEVICE_BACKEND_CALLS = ("is_available", "is_built", "version")
# Writes to the check process's stdout and stderr are no probe: artbot counts those bytes and
# drops them (verify/apart.py, verify/zygote.py); results come back only on their own pipe
# (the check's document, the regression test's JUnit report: patchtest/regress.py). Reading
# them, rebinding them (``sys.stderr = ...``) or ``os.dup2`` onto them still is.
LOG_WRITES = frozenset(f"sys.{s}.{w}" for s in ("stdout", "stderr", "__stdout__", "__stderr__")
                       for w in ("write", "writelines", "flush"))  # fmt: skip
LOG_STREAMS = frozenset(w.rpartition(".")[0] for w in LOG_WRITES)  # ``print(file=...)``
