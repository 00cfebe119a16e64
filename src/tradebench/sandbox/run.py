"""The parent side of the sandbox: start the confined child, stream its output, end it.

`run_python` starts `child.py` (the confinement, then `execve` of the program) with its
configuration on one pipe and reads back, on another, the layers that took effect, written
before the program starts, so the program cannot change them. Output is read as it
arrives and kept only up to a cap per stream. At the timeout the sandbox's PID 1 is killed,
which takes every process of its PID namespace with it; the call returns at most about a
second later, after checking that PID 1 is gone.

Without every layer in `REQUIRED_LAYERS` the call refuses (`SandboxUnavailable`) before the
program runs, unless the caller opts in (`SandboxLimits.allow_weak` or the environment
variable `TRADEBENCH_SANDBOX_ALLOW_WEAK=1`).
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import json
import os
import pwd
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from tradebench.errors import SandboxUnavailable

CHILD = Path(__file__).with_name("child.py")
WEAK_ENV = "TRADEBENCH_SANDBOX_ALLOW_WEAK"
REQUIRED_LAYERS = (
    "user-namespace",
    "pid-namespace",
    "no-network(netns)",
    "disk-cap",
    "filesystem(landlock",
    "syscall-filter(seccomp)",
)
"""Layer names (prefixes) a run needs before untrusted code may start."""
_READ_ROOTS = ("/usr", "/lib", "/lib64", "/bin", "/sbin", "/dev", "/sys")
_READ_FILES = (
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/mime.types",
)
_DISTRO_FILES = ("/etc/os-release", "/etc/debian_version", "/etc/lsb-release")
"""Read by pip (its user agent names the distribution) in a workspace."""
_GRACE_S = 1.0
_SYS_LANDLOCK_CREATE = 444


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one run (seconds, bytes, counts)."""

    timeout_s: float = 60.0
    cpu_s: int = 60
    memory_bytes: int = 2 * 1024**3
    file_bytes: int = 64 * 1024**2
    """Largest single file the program may write."""
    disk_bytes: int = 256 * 1024**2
    """All files of the working directory together (its tmpfs size)."""
    max_files: int = 4096
    """Files and directories in the working directory."""
    output_bytes: int = 1024**2
    """Bytes kept of stdout and of stderr each; the rest is read and dropped."""
    processes: int = 32
    open_files: int = 256
    allow_subprocesses: bool = False
    allow_weak: bool = False
    """Run even where the kernel lacks a required layer (the result says which held)."""


@dataclass(frozen=True)
class WorkspaceSpec:
    """A persistent workspace for a run (`sandbox.workspace.Workspace` makes one).

    `root` is a host folder the program never sees: its `files` subfolder is copied into the
    fresh tmpfs before the program starts and replaced by the tmpfs's content after it ends.
    """

    root: str
    read_dirs: tuple[str, ...] = ()
    """Extra host folders the program may read (a wheel directory, an agent's program)."""
    python_flags: tuple[str, ...] = ("-E",)
    """Interpreter flags: the script's folder (where pip installs) is on sys.path, so files
    and packages from earlier calls import."""
    env: tuple[tuple[str, str], ...] = ()
    """Variables added to the program's environment (e.g. pip's offline settings)."""


@dataclass(frozen=True)
class SandboxResult:
    """What happened: exit code (negative = killed by that signal), output, timing, layers."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float
    enforced: tuple[str, ...]
    """Layers that took effect, as the confined start-up reported them before the program."""
    output_truncated: bool = False
    """stdout or stderr went past `output_bytes`; the rest was dropped."""
    missing: tuple[str, ...] = ()
    """Required layers that did not take effect (only with `allow_weak`)."""
    saved_files: int | None = None
    """With a workspace: files saved back after the run (None: nothing saved, e.g. a
    timeout, and the workspace keeps its earlier content)."""

    @property
    def ok(self) -> bool:
        """True when the code exited with status 0 within the time limit."""
        return self.exit_code == 0 and not self.timed_out


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is unavailable."""
    if not sys.platform.startswith("linux"):
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    version = libc.syscall(_SYS_LANDLOCK_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(0, int(version))


def _read_roots() -> list[str]:
    """Directories the program may read: the interpreter, its packages, system dirs."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, *_READ_ROOTS}
    roots.add(os.path.dirname(os.path.realpath(sys.executable)))
    roots.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    real = sorted({os.path.realpath(p) for p in roots if os.path.isdir(p)})
    return [p for p in real if not any(p.startswith(q + "/") for q in real if q != p)]


def _fresh_uid() -> int:
    """A uid no account has, so the sandbox's processes are the only ones with it."""
    while True:
        uid = 1_000_000_000 + secrets.randbelow(1_000_000_000)
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid


def _required(limits: SandboxLimits) -> list[str]:
    needed = list(REQUIRED_LAYERS)
    if os.geteuid() == 0:
        needed.append("unprivileged-uid")
    if not limits.allow_subprocesses:
        needed.append("no-subprocesses(seccomp)")
    return needed


def _environment(workdir: str, extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
    }
    env.update(extra or {})
    return env


def _config(
    code: str,
    files: Mapping[str, bytes],
    limits: SandboxLimits,
    env: Mapping[str, str] | None,
    workdir: str,
    weak: bool,
    workspace: WorkspaceSpec | None = None,
) -> bytes:
    payload = {name: base64.b64encode(data).decode() for name, data in files.items()}
    payload["main.py"] = base64.b64encode(code.encode("utf-8")).decode()
    cfg = {
        "workdir": workdir,
        "harness_pid": os.getpid(),
        "uid": _fresh_uid() if os.geteuid() == 0 else os.getuid(),
        "files": payload,
        "limits": {
            "cpu_s": limits.cpu_s,
            "memory_bytes": limits.memory_bytes,
            "file_bytes": limits.file_bytes,
            "disk_bytes": limits.disk_bytes,
            "max_files": limits.max_files,
            "processes": limits.processes,
            "open_files": limits.open_files,
            "allow_subprocesses": limits.allow_subprocesses,
        },
        "read_roots": _read_roots(),
        "read_files": list(_READ_FILES),
        "executable": sys.executable,
        "env": _environment(workdir, env),
        "required": _required(limits),
        "allow_weak": weak,
    }
    if workspace is not None:
        cfg.update(_workspace_config(workspace, workdir, env))
    return json.dumps(cfg).encode()


def _workspace_config(
    workspace: WorkspaceSpec, workdir: str, env: Mapping[str, str] | None
) -> dict:
    """The configuration keys a persistent workspace adds (see `WorkspaceSpec`)."""
    extra = {**dict(workspace.env), **(env or {})}
    read = sorted({os.path.realpath(p) for p in workspace.read_dirs if os.path.isdir(p)})
    return {
        "workspace": os.path.realpath(workspace.root),
        "read_files": [*_READ_FILES, *_DISTRO_FILES],
        "python_flags": list(workspace.python_flags),
        "read_roots": sorted({*_read_roots(), *read}),
        "env": _environment(workdir, extra),
    }


def _check_names(files: Mapping[str, bytes]) -> None:
    for name in files:
        if not name or name in {".", "..", "main.py"} or "/" in name or "\0" in name:
            raise ValueError(f"sandbox file name {name!r} must be a plain file name")


@dataclass
class _Streams:
    """Output kept so far, with the cap applied while reading."""

    cap: int
    out: bytearray
    err: bytearray
    report: bytearray
    truncated: bool = False

    def add(self, which: str, chunk: bytes) -> None:
        buf = {"out": self.out, "err": self.err, "report": self.report}[which]
        room = self.cap - len(buf) if which != "report" else 1 << 20
        if len(chunk) > room:
            self.truncated = self.truncated or which != "report"
            chunk = chunk[: max(room, 0)]
        buf += chunk


def _pid_of(report: bytes) -> int | None:
    for line in report.splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if "pid" in record:
                return int(record["pid"])
    return None


def _records(report: bytes) -> dict:
    merged: dict = {}
    for line in report.splitlines():
        with contextlib.suppress(ValueError):
            merged.update(json.loads(line))
    return merged


def _dead(pid: int) -> bool:
    """True when `pid` has exited (gone, or a zombie waiting to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in {"Z", "X"}


def _end(proc: subprocess.Popen[bytes], pid1: int | None) -> None:
    """Kill the sandbox's PID 1 (its namespace dies with it) and the start-up process."""
    for pid in (pid1,):
        if pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _pump(
    proc: subprocess.Popen[bytes], report_fd: int, limits: SandboxLimits
) -> tuple[_Streams, bool, float]:
    """Read stdout, stderr and the report until all close or the time is up."""
    start = time.monotonic()
    deadline = start + limits.timeout_s
    streams = _Streams(limits.output_bytes, bytearray(), bytearray(), bytearray())
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    sel.register(proc.stderr, selectors.EVENT_READ, "err")
    sel.register(report_fd, selectors.EVENT_READ, "report")
    timed_out = False
    hard_stop = None
    while sel.get_map():
        now = time.monotonic()
        if not timed_out and now >= deadline:
            timed_out = True
            _end(proc, _pid_of(bytes(streams.report)))
            hard_stop = now + _GRACE_S
        if hard_stop is not None and now >= hard_stop:
            break
        wait = (hard_stop if hard_stop is not None else deadline) - now
        for key, _ in sel.select(timeout=max(wait, 0.0)):
            chunk = os.read(key.fd, 1 << 16)
            if chunk:
                streams.add(key.data, chunk)
            else:
                sel.unregister(key.fileobj)
    sel.close()
    return streams, timed_out, start


def _wait(proc: subprocess.Popen[bytes], pid1: int | None) -> None:
    """Reap the start-up process and make sure PID 1 is dead, within the grace second."""
    try:
        proc.wait(timeout=_GRACE_S)
    except subprocess.TimeoutExpired:
        _end(proc, pid1)
        proc.wait(timeout=_GRACE_S)
    if pid1 is not None:
        stop = time.monotonic() + _GRACE_S
        while not _dead(pid1) and time.monotonic() < stop:
            time.sleep(0.01)
        if not _dead(pid1):
            _end(proc, pid1)


def _refusal(records: dict) -> SandboxUnavailable:
    if "error" in records:
        return SandboxUnavailable(
            f"the code sandbox could not start ({records['error']}); "
            "model-written code was not run. See docs/mcq.md, 'The code sandbox'."
        )
    missing = ", ".join(records.get("missing", [])) or "unknown"
    return SandboxUnavailable(
        f"this machine cannot confine model-written code: missing {missing} "
        "(a Linux kernel with user namespaces, Landlock and seccomp gives them); "
        f"pass --allow-weak-sandbox or set {WEAK_ENV}=1 to run it with the layers it has"
    )


def run_python(
    code: str,
    files: Mapping[str, bytes] | None = None,
    limits: SandboxLimits | None = None,
    env: Mapping[str, str] | None = None,
    *,
    workspace: WorkspaceSpec | None = None,
) -> SandboxResult:
    """Run `code` as main.py in a fresh working directory holding `files`, confined.

    With `workspace`, the directory starts with the workspace's saved files and what the
    program leaves there is saved back when it ends. The parent never raises for the
    program's own failures (they are in the result).

    Raises:
        SandboxUnavailable: A required layer is missing and weak runs were not allowed,
            or the confined start-up failed; nothing of `code` ran.
        ValueError: A file name is not a plain name.
    """
    limits = limits or SandboxLimits()
    files = dict(files or {})
    _check_names(files)
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailable(
            "the code sandbox needs Linux (namespaces, Landlock, seccomp); "
            "run model-written code on a Linux machine"
        )
    weak = limits.allow_weak or os.environ.get(WEAK_ENV) == "1"
    workdir = tempfile.mkdtemp(prefix="tb-sandbox-")
    cfg_r, cfg_w = os.pipe()
    rep_r, rep_w = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", str(CHILD), str(cfg_r), str(rep_w)],
            cwd=workdir,
            env=_environment(workdir, None),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(cfg_r, rep_w),
            start_new_session=True,
        )
        os.close(cfg_r)
        os.close(rep_w)
        cfg_r = rep_w = -1
        with contextlib.suppress(BrokenPipeError), os.fdopen(cfg_w, "wb") as fh:
            cfg_w = -1
            fh.write(_config(code, files, limits, env, workdir, weak, workspace))
        streams, timed_out, start = _pump(proc, rep_r, limits)
        records = _records(bytes(streams.report))
        _wait(proc, records.get("pid"))
        seconds = time.monotonic() - start
    finally:
        for fd in (cfg_r, cfg_w, rep_w, rep_r):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        shutil.rmtree(workdir, ignore_errors=True)
    if "enforced" not in records or (records.get("missing") and not weak):
        raise _refusal(records)  # the program never started
    enforced = (*records.get("enforced", ()), "timeout", "output-cap")
    return SandboxResult(
        exit_code=proc.returncode,
        stdout=streams.out.decode("utf-8", "replace"),
        stderr=streams.err.decode("utf-8", "replace"),
        timed_out=timed_out,
        seconds=seconds,
        enforced=enforced if "enforced" in records else (),
        output_truncated=streams.truncated,
        missing=tuple(records.get("missing", ())),
        saved_files=records.get("saved"),
    )


@cache
def _preflight(limits: SandboxLimits) -> tuple[str, ...]:
    result = run_python("pass", limits=replace(limits, timeout_s=30.0))
    if not result.ok:
        raise SandboxUnavailable(
            f"the code sandbox could not run an empty program (exit {result.exit_code}): "
            f"{result.stderr.strip().splitlines()[-1:] or ['no output']}"
        )
    return result.enforced


def sandbox_preflight(limits: SandboxLimits | None = None) -> tuple[str, ...]:
    """Check once per process, before any model call, that the sandbox can run here.

    Returns the layers that take effect; raises `SandboxUnavailable` (one clear line) when
    a required one is missing and weak runs were not allowed.
    """
    limits = limits or SandboxLimits()
    weak = limits.allow_weak or os.environ.get(WEAK_ENV) == "1"
    return _preflight(replace(limits, allow_weak=weak))
