"""`run_python`: run untrusted Python in a fresh temporary directory, in a confined child.

What is enforced (Linux; each layer is applied in the child between fork and exec, and the
ones that took effect are reported in `SandboxResult.enforced`):

- resource limits (`setrlimit`): CPU seconds, address space, size of any file written,
  processes (RLIMIT_NPROC; the kernel exempts uid 0 from it), open files; no core dumps;
- no new processes (default): a seccomp filter refuses fork, vfork and non-thread clone
  (x86-64), so the process count holds even for root; threads still work;
- a wall-clock timeout: the child runs in its own session and the whole process group is
  killed with SIGKILL when the timeout passes (a descendant that calls `setsid` itself
  leaves the group and is only bounded by its own CPU limit);
- no network: a new, empty network namespace inside a new user namespace (no interface
  but a down loopback), plus Landlock TCP rules where the kernel has them;
- file system (Landlock, unprivileged, kernel >= 5.13): writes, deletions, renames and
  creations are allowed only beneath the temporary directory; reads and execution only
  beneath the temporary directory, the Python installation, /usr, /lib*, /bin, /dev,
  /proc, /sys and a few /etc files the loader needs. It does not rely on root and would
  work the same for an ordinary user;
- no signals to processes outside the sandbox and no abstract Unix sockets (Landlock
  scopes, ABI >= 6): without it, a child running as the same user could kill its parent;
- a minimal environment (PATH, HOME and TMPDIR pointing at the directory, one BLAS thread)
  and `python -I` (no user site, no PYTHON* variables).

Where a kernel lacks a layer (no user namespaces, no Landlock) the run still happens with
the layers that do apply, and `enforced` says which.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_SYS_LANDLOCK_CREATE, _SYS_LANDLOCK_ADD, _SYS_LANDLOCK_RESTRICT = 444, 445, 446
_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000
_PR_SET_NO_NEW_PRIVS = 38
_FS_EXECUTE, _FS_WRITE, _FS_READ_FILE, _FS_READ_DIR = 1, 2, 4, 8
_FS_READ = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
_FS_MODIFY_V1 = sum(1 << b for b in range(4, 13)) | _FS_WRITE  # remove, make_*
_FS_REFER, _FS_TRUNCATE = 1 << 13, 1 << 14
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1, 2
_READ_ROOTS = ("/usr", "/lib", "/lib64", "/bin", "/sbin", "/dev", "/proc", "/sys")
_READ_FILES = (
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/mime.types",
)
STATUS_FILE = ".sandbox_enforced.json"


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one run (seconds, bytes, counts)."""

    timeout_s: float = 60.0
    cpu_s: int = 60
    memory_bytes: int = 2 * 1024**3
    file_bytes: int = 64 * 1024**2
    processes: int = 32
    open_files: int = 256
    allow_subprocesses: bool = False


@dataclass(frozen=True)
class SandboxResult:
    """What happened: exit code (negative = killed by that signal), output, timing, layers."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float
    enforced: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """True when the code exited with status 0 within the time limit."""
        return self.exit_code == 0 and not self.timed_out


class _RulesetAttr(ctypes.Structure):
    _fields_ = (("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64))


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is unavailable."""
    if not sys.platform.startswith("linux"):
        return 0
    version = _libc().syscall(_SYS_LANDLOCK_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(0, int(version))


def _read_roots(workdir: str) -> list[tuple[str, int]]:
    roots = {workdir, sys.prefix, sys.base_prefix, sys.exec_prefix, *_READ_ROOTS}
    roots.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    rules = [(p, _FS_READ) for p in sorted(roots) if os.path.isdir(p)]
    rules += [(p, _FS_READ_FILE) for p in _READ_FILES if os.path.isfile(p)]
    return rules


def _landlock(workdir: str, abi: int) -> bool:
    libc = _libc()
    modify = _FS_MODIFY_V1 | (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0)
    net = (_NET_BIND_TCP | _NET_CONNECT_TCP) if abi >= 4 else 0
    scoped = (_SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL) if abi >= 6 else 0
    attr = _RulesetAttr(_FS_READ | modify, net, scoped)
    size = 24 if scoped else (16 if net else 8)
    fd = libc.syscall(_SYS_LANDLOCK_CREATE, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if fd < 0:
        return False
    rules = [(workdir, _FS_READ | modify), *_read_roots(workdir)]
    for path, allowed in rules:
        pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        rule = _PathBeneath(allowed, pfd)
        libc.syscall(_SYS_LANDLOCK_ADD, fd, 1, ctypes.byref(rule), 0)
        os.close(pfd)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return libc.syscall(_SYS_LANDLOCK_RESTRICT, fd, 0) == 0


class _SockFilter(ctypes.Structure):
    _fields_ = (
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    )


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter)))


_LD_W_ABS, _JEQ_K, _JSET_K, _RET_K = 0x20, 0x15, 0x45, 0x06
_ALLOW, _EPERM, _ENOSYS = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
_X86_64, _CLONE_THREAD = 0xC000003E, 0x00010000
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2


def _no_fork_filter() -> list[tuple[int, int, int, int]]:
    """BPF (x86-64): fork/vfork -> EPERM, clone3 -> ENOSYS (libc falls back to clone),
    clone without CLONE_THREAD -> EPERM; threads and everything else are allowed."""
    return [
        (_LD_W_ABS, 0, 0, 4),  # 0 arch
        (_JEQ_K, 0, 9, _X86_64),  # 1 other arch -> allow (11)
        (_LD_W_ABS, 0, 0, 0),  # 2 syscall number
        (_JEQ_K, 6, 0, 57),  # 3 fork -> eperm (10)
        (_JEQ_K, 5, 0, 58),  # 4 vfork -> eperm (10)
        (_JEQ_K, 0, 1, 435),  # 5 clone3 -> enosys (7)
        (_RET_K, 0, 0, _ENOSYS),  # 6
        (_JEQ_K, 0, 3, 56),  # 7 not clone -> allow (11)
        (_LD_W_ABS, 0, 0, 16),  # 8 clone flags (low word)
        (_JSET_K, 2, 0, _CLONE_THREAD),  # 9 a thread -> allow (12)
        (_RET_K, 0, 0, _EPERM),  # 10
        (_RET_K, 0, 0, _ALLOW),  # 11
        (_RET_K, 0, 0, _ALLOW),  # 12
    ]


def _seccomp_no_fork() -> bool:
    prog = _no_fork_filter()
    arr = (_SockFilter * len(prog))(*[_SockFilter(*ins) for ins in prog])
    fprog = _SockFprog(len(prog), arr)
    libc = _libc()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) == 0


def _set_limits(limits: SandboxLimits) -> None:
    pairs = (
        (resource.RLIMIT_CPU, limits.cpu_s, limits.cpu_s + 1),
        (resource.RLIMIT_AS, limits.memory_bytes, limits.memory_bytes),
        (resource.RLIMIT_FSIZE, limits.file_bytes, limits.file_bytes),
        (resource.RLIMIT_NPROC, limits.processes, limits.processes),
        (resource.RLIMIT_NOFILE, limits.open_files, limits.open_files),
        (resource.RLIMIT_CORE, 0, 0),
    )
    for which, soft, hard in pairs:
        resource.setrlimit(which, (soft, hard))


def _confine(workdir: str, limits: SandboxLimits, abi: int) -> None:
    """Runs in the child between fork and exec: namespaces, Landlock, then rlimits."""
    enforced = ["rlimits", "timeout", "minimal-env"]
    if _libc().unshare(_CLONE_NEWUSER | _CLONE_NEWNET) == 0:
        enforced.append("no-network(netns)")
    if abi and _landlock(workdir, abi):
        enforced.append(f"filesystem(landlock-abi{abi})")
        if abi >= 4:
            enforced.append("no-tcp(landlock)")
        if abi >= 6:
            enforced.append("no-signals-out(landlock)")
    if not limits.allow_subprocesses and _seccomp_no_fork():
        enforced.append("no-subprocesses(seccomp)")
    with open(os.path.join(workdir, STATUS_FILE), "w") as fh:
        json.dump(enforced, fh)
    _set_limits(limits)


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


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def run_python(
    code: str,
    files: Mapping[str, bytes] | None = None,
    limits: SandboxLimits | None = None,
    env: Mapping[str, str] | None = None,
) -> SandboxResult:
    """Run `code` as main.py in a fresh temporary directory holding `files`, confined.

    The directory is deleted afterwards; the parent never raises for the child's failures.
    """
    limits = limits or SandboxLimits()
    abi = landlock_abi()
    with tempfile.TemporaryDirectory(prefix="tb-sandbox-") as workdir:
        for name, data in (files or {}).items():
            target = Path(workdir, name)
            if target.resolve().parent != Path(workdir).resolve():
                raise ValueError(f"sandbox file name {name!r} must be a plain file name")
            target.write_bytes(data)
        Path(workdir, "main.py").write_text(code, encoding="utf-8")
        start = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-I", "main.py"],
            cwd=workdir,
            env=_environment(workdir, env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=lambda: _confine(workdir, limits, abi),
        )
        timed_out = False
        try:
            out, err = proc.communicate(timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc.pid)
            out, err = proc.communicate()
        _kill_group(proc.pid)
        status = Path(workdir, STATUS_FILE)
        enforced = tuple(json.loads(status.read_text())) if status.exists() else ()
        return SandboxResult(
            exit_code=proc.returncode,
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
            timed_out=timed_out,
            seconds=time.monotonic() - start,
            enforced=enforced,
        )
