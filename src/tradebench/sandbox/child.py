"""The sandbox's own start-up: confine a fresh process, then exec the untrusted program.

Run as a script (`python -I child.py CONFIG_FD REPORT_FD`) by `tradebench.sandbox.run`, never
imported by the package: it must not depend on anything the confinement could break, so it
uses the standard library only. Its steps, in order:

1. As root only: a private mount namespace where directories the dedicated uid could not
   traverse (the interpreter under `/root`, say) are replaced by a tmpfs holding read-only
   bind mounts of just the read roots; then every group dropped and a fresh uid/gid that no
   other process on the machine has (`setresuid`), so root's ownership of host files, its
   signals and its `/proc` view are gone.
2. As the unprivileged uid: new user, mount, network, PID and IPC namespaces, then a fork.
   The child is PID 1 of the new PID namespace: when it dies the kernel kills every process
   left in it, and it dies with this process (`PR_SET_PDEATHSIG`).
3. In the child: a size-capped tmpfs mounted over the working directory (the total disk cap)
   holding the program's files; Landlock (writes only beneath the working directory, reads
   only beneath the read roots, no TCP, no signals or abstract sockets out); rlimits; a
   seccomp filter (native architecture only; no fork, no Unix or other local sockets, no
   io_uring, no ptrace, no mounts or namespaces, no chmod/chown/utime/xattr changes, and no
   memory outside the address space that RLIMIT_AS caps: memfd, SysV shared memory and
   message queues, POSIX message queues).
4. The child writes the layers that took effect on REPORT_FD, which is closed before `execve`,
   so the program cannot change what is reported; then it execs the interpreter on main.py.

This process waits for the child and exits with its status (a signal is re-raised).

With a persistent workspace (`cfg["workspace"]`, a host folder only this start-up touches):
as root the start-up first gives the folder to the sandbox's uid; PID 1 copies it into the
fresh tmpfs before confining itself; after PID 1 is gone (and with it every process of its
namespace, so nothing can change the tmpfs any more) the start-up, still in the mount
namespace that holds the tmpfs, copies the tmpfs back over the folder: plain files and
folders only, never following a link, then reports what it saved on REPORT_FD.
"""

from __future__ import annotations

import base64
import ctypes
import json
import os
import resource
import signal
import sys

_CLONE_NEWNS, _CLONE_NEWUSER, _CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
_CLONE_NEWNET, _CLONE_NEWIPC = 0x40000000, 0x08000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_REMOUNT = 1, 2, 4, 32
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP = 1, 4, 38, 22
_SECCOMP_MODE_FILTER = 2

_SYS_LANDLOCK_CREATE, _SYS_LANDLOCK_ADD, _SYS_LANDLOCK_RESTRICT = 444, 445, 446
_FS_EXECUTE, _FS_WRITE, _FS_READ_FILE, _FS_READ_DIR = 1, 2, 4, 8
_FS_READ = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
_FS_MODIFY_V1 = sum(1 << b for b in range(4, 13)) | _FS_WRITE  # remove, make_*
_FS_REFER, _FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1, 2

# --------------------------------------------------------------------------- seccomp (x86-64)
_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_BIT = 0x40000000
_LD_W_ABS, _JEQ_K, _JSET_K, _RET_K = 0x20, 0x15, 0x45, 0x06
_KILL_PROCESS, _ALLOW = 0x80000000, 0x7FFF0000
_EPERM, _ENOSYS = 0x00050000 | 1, 0x00050000 | 38
_CLONE_THREAD = 0x00010000
_AF_INET, _AF_INET6 = 2, 10
_NR_FORK, _NR_VFORK, _NR_CLONE, _NR_CLONE3, _NR_SOCKET = 57, 58, 56, 435, 41
_NR_DENIED = {
    "io_uring": (425, 426, 427),
    "ptrace": (101, 310, 311, 312),  # ptrace, process_vm_readv/writev, kcmp
    "mounts": (165, 166, 155, 161, 272, 308, 428, 429, 430, 431, 432, 433, 442),
    "metadata": (90, 91, 268, 452, 92, 93, 94, 260, 132, 235, 261, 280),  # chmod/chown/utime
    "xattr": (188, 189, 190, 197, 198, 199, 463, 466),
    "kernel": (248, 249, 250, 298, 321, 323),  # keys, perf, bpf, userfaultfd
    # memory RLIMIT_AS does not count: memfd_create, memfd_secret, SysV shmget and msgget,
    # POSIX mq_open (files in /dev/shm are outside Landlock's write roots)
    "unaccounted-memory": (319, 447, 29, 68, 240),
}


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def syscall_filter(allow_subprocesses: bool) -> list[tuple[int, int, int, int]]:
    """The BPF program: a foreign architecture or the x32 ABI kills the process; process
    creation (unless allowed), non-IP sockets, io_uring, ptrace, mounts and namespaces,
    metadata changes, memory the address-space cap does not count (memfd, SysV shared memory
    and message queues, POSIX message queues) and a few kernel interfaces fail with EPERM; the
    rest is allowed."""
    prog: list[tuple[int, int, int, int]] = [
        (_LD_W_ABS, 0, 0, 4),  # arch
        (_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
        (_RET_K, 0, 0, _KILL_PROCESS),  # int 0x80 (i386) and any other ABI
        (_LD_W_ABS, 0, 0, 0),  # syscall number
        (_JSET_K, 0, 1, _X32_BIT),
        (_RET_K, 0, 0, _KILL_PROCESS),  # the x32 ABI
    ]
    denied = [nr for group in _NR_DENIED.values() for nr in group]
    if not allow_subprocesses:
        denied += [_NR_FORK, _NR_VFORK]
    for nr in denied:
        prog += [(_JEQ_K, 0, 1, nr), (_RET_K, 0, 0, _EPERM)]
    # clone3 passes its flags in memory the filter cannot read: ENOSYS makes libc fall back
    # to clone, whose flags it can.
    prog += [(_JEQ_K, 0, 1, _NR_CLONE3), (_RET_K, 0, 0, _ENOSYS)]
    if not allow_subprocesses:
        prog += [
            (_JEQ_K, 0, 4, _NR_CLONE),
            (_LD_W_ABS, 0, 0, 16),  # args[0], the clone flags (low word)
            (_JSET_K, 0, 1, _CLONE_THREAD),
            (_RET_K, 0, 0, _ALLOW),  # a thread
            (_RET_K, 0, 0, _EPERM),  # a process
            (_LD_W_ABS, 0, 0, 0),  # reload the number for the socket test
        ]
    prog += [
        (_JEQ_K, 0, 5, _NR_SOCKET),
        (_LD_W_ABS, 0, 0, 16),  # args[0], the address family
        (_JEQ_K, 2, 0, _AF_INET),
        (_JEQ_K, 1, 0, _AF_INET6),
        (_RET_K, 0, 0, _EPERM),  # AF_UNIX, AF_VSOCK, AF_NETLINK, ...
        (_RET_K, 0, 0, _ALLOW),
        (_RET_K, 0, 0, _ALLOW),
    ]
    return prog


class _SockFilter(ctypes.Structure):
    _fields_ = (
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    )


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter)))


def _seccomp(allow_subprocesses: bool) -> bool:
    if os.uname().machine != "x86_64":
        return False  # the filter's syscall numbers are x86-64's
    prog = syscall_filter(allow_subprocesses)
    arr = (_SockFilter * len(prog))(*[_SockFilter(*ins) for ins in prog])
    fprog = _SockFprog(len(prog), arr)
    libc = _libc()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) == 0


# --------------------------------------------------------------------------- Landlock
class _RulesetAttr(ctypes.Structure):
    _fields_ = (("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64))


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def _landlock_abi() -> int:
    libc = _libc()
    version = libc.syscall(_SYS_LANDLOCK_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(0, int(version))


def _landlock(workdir: str, read_roots: list[str], read_files: list[str]) -> list[str]:
    """Apply the file system, TCP and scope rules; the layers that took effect."""
    abi = _landlock_abi()
    if abi == 0:
        return []
    libc = _libc()
    modify = _FS_MODIFY_V1 | (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0)
    modify |= _FS_IOCTL_DEV if abi >= 5 else 0
    net = (_NET_BIND_TCP | _NET_CONNECT_TCP) if abi >= 4 else 0
    scoped = (_SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL) if abi >= 6 else 0
    attr = _RulesetAttr(_FS_READ | modify, net, scoped)
    size = 24 if scoped else (16 if net else 8)
    fd = libc.syscall(_SYS_LANDLOCK_CREATE, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if fd < 0:
        return []
    rules = [(workdir, _FS_READ | modify)]
    rules += [(p, _FS_READ) for p in read_roots if os.path.isdir(p)]
    rules += [(p, _FS_READ_FILE) for p in read_files if os.path.isfile(p)]
    for path, allowed in rules:
        pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        rule = _PathBeneath(allowed, pfd)
        libc.syscall(_SYS_LANDLOCK_ADD, fd, 1, ctypes.byref(rule), 0)
        os.close(pfd)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return []
    if libc.syscall(_SYS_LANDLOCK_RESTRICT, fd, 0) != 0:
        return []
    layers = [f"filesystem(landlock-abi{abi})"]
    layers += ["no-tcp(landlock)"] if net else []
    layers += ["no-signals-out(landlock)"] if scoped else []
    return layers


# --------------------------------------------------------------------------- namespaces
def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> bool:
    libc = _libc()
    return (
        libc.mount(
            source.encode(),
            target.encode(),
            None if fstype is None else fstype.encode(),
            ctypes.c_ulong(flags),
            None if data is None else data.encode(),
        )
        == 0
    )


def _traversable_by_others(path: str) -> bool:
    try:
        return bool(os.stat(path).st_mode & 0o001)
    except OSError:
        return False


def _expose_read_roots(read_roots: list[str]) -> bool:
    """In root's private mount namespace, make each read root reachable by an unprivileged
    uid: the first ancestor others cannot traverse gets a tmpfs (mode 0755) holding read-only
    bind mounts of the read roots beneath it, and nothing else."""
    hidden: dict[str, list[str]] = {}
    for root in read_roots:
        parts = root.strip("/").split("/")
        for i in range(1, len(parts)):
            ancestor = "/" + "/".join(parts[:i])
            if not _traversable_by_others(ancestor):
                hidden.setdefault(ancestor, []).append(root)
                break
    for ancestor, roots in sorted(hidden.items()):
        keep = {r: os.open(r, os.O_PATH | os.O_CLOEXEC) for r in roots if os.path.isdir(r)}
        if not _mount("tmpfs", ancestor, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755,size=1m"):
            return False
        for root, fd in keep.items():
            os.makedirs(root, mode=0o755, exist_ok=True)
            if not _mount(f"/proc/self/fd/{fd}", root, None, _MS_BIND | _MS_REC, None):
                return False
            _mount("none", root, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY, None)
            os.close(fd)
    return True


def _drop_root(uid: int, workdir: str, read_roots: list[str]) -> list[str]:
    """As root: hide what the dedicated uid cannot reach, then become that uid."""
    layers = []
    libc = _libc()
    private = libc.unshare(_CLONE_NEWNS) == 0
    private = private and _mount("none", "/", None, _MS_REC | _MS_PRIVATE, None)
    if private and _expose_read_roots(read_roots):
        layers.append("read-roots-exposed(mount-ns)")
    os.chown(workdir, uid, uid)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (uid, uid, uid):
        return layers
    # a uid change makes the process non-dumpable, its /proc files root's: it could not
    # write its own uid_map; the uid is the sandbox's alone, so no one else gains access
    libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
    layers.append("unprivileged-uid")
    return layers


def _new_namespaces() -> list[str]:
    """New user, mount, network, PID and IPC namespaces, the user mapped to itself."""
    uid, gid = os.getuid(), os.getgid()
    flags = _CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWNET | _CLONE_NEWPID | _CLONE_NEWIPC
    if _libc().unshare(flags) != 0:
        return []
    maps = (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1"))
    for name, text in maps:
        with open(f"/proc/self/{name}", "w") as fh:
            fh.write(text)
    return ["user-namespace", "no-network(netns)", "pid-namespace(kill-all)"]


def _disk(workdir: str, disk_bytes: int, max_files: int) -> bool:
    """A size-capped tmpfs over the working directory: the total disk cap."""
    uid, gid = os.getuid(), os.getgid()
    if not _mount("none", "/", None, _MS_REC | _MS_PRIVATE, None):
        return False
    data = f"size={disk_bytes},nr_inodes={max_files},mode=0700,uid={uid},gid={gid}"
    return _mount("tmpfs", workdir, "tmpfs", _MS_NOSUID | _MS_NODEV, data)


def _limits(cfg: dict) -> None:
    limits = cfg["limits"]
    pairs = [
        (resource.RLIMIT_CPU, limits["cpu_s"], limits["cpu_s"] + 1),
        (resource.RLIMIT_AS, limits["memory_bytes"], limits["memory_bytes"]),
        (resource.RLIMIT_FSIZE, limits["file_bytes"], limits["file_bytes"]),
        (resource.RLIMIT_NOFILE, limits["open_files"], limits["open_files"]),
        (resource.RLIMIT_CORE, 0, 0),
    ]
    if cfg["dedicated_uid"] or limits["allow_subprocesses"]:
        # per uid: exact when the uid is the sandbox's own
        pairs.append((resource.RLIMIT_NPROC, limits["processes"], limits["processes"]))
    for which, soft, hard in pairs:
        resource.setrlimit(which, (soft, hard))


def _write_files(workdir: str, files: dict[str, str]) -> None:
    for name, encoded in files.items():
        with open(os.path.join(workdir, name), "wb") as fh:
            fh.write(base64.b64decode(encoded))


# --------------------------------------------------------------------------- workspace
def _own_tree(root: str, uid: int) -> None:
    """As root, before the uid change: make `root` and everything beneath it the uid's."""
    os.lchown(root, uid, uid)
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            os.lchown(os.path.join(folder, name), uid, uid)


def _copy_tree(source: str, target: str) -> tuple[int, list[str]]:
    """Copy plain files and folders from `source` into `target` (links, devices, pipes and
    sockets are skipped and named); never follows a link. Returns (files copied, skipped)."""
    copied, skipped = 0, []
    with os.scandir(source) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            src, dst = os.path.join(source, entry.name), os.path.join(target, entry.name)
            if entry.is_dir(follow_symlinks=False):
                os.mkdir(dst, 0o700)
                more, also = _copy_tree(src, dst)
                copied, skipped = copied + more, skipped + also
            elif entry.is_file(follow_symlinks=False) and _copy_file(src, dst):
                copied += 1
            else:
                skipped.append(entry.name)
    return copied, skipped


def _copy_file(src: str, dst: str) -> bool:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(src, flags)
    except OSError:
        return False
    try:
        mode = os.fstat(fd).st_mode
        if (mode & 0o170000) != 0o100000:
            return False
        out = os.open(
            dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600 | (mode & 0o100)
        )
        try:
            while chunk := os.read(fd, 1 << 20):
                os.write(out, chunk)
        finally:
            os.close(out)
        return True
    finally:
        os.close(fd)


def _save_workspace(workdir: str, root: str) -> dict:
    """Make the tmpfs's content the workspace's: copied to `root/next`, then swapped in for
    `root/files` by two renames, so a start-up killed mid-copy leaves the old content."""
    staging, files, old = (os.path.join(root, n) for n in ("next", "files", "old"))
    for leftover in (staging, old):
        if os.path.lexists(leftover):
            _remove_tree(leftover)
    os.mkdir(staging, 0o700)
    copied, skipped = _copy_tree(workdir, staging)
    if os.path.lexists(files):
        os.rename(files, old)
    os.rename(staging, files)
    if os.path.lexists(old):
        _remove_tree(old)
    return {"saved": copied, "skipped": skipped[:20]}


def _remove_tree(path: str) -> None:
    if os.path.islink(path) or not os.path.isdir(path):
        os.unlink(path)
        return
    for folder, dirs, files in os.walk(path, topdown=False):
        for name in files:
            os.unlink(os.path.join(folder, name))
        for name in dirs:
            full = os.path.join(folder, name)
            if os.path.islink(full):
                os.unlink(full)
            else:
                os.rmdir(full)
    os.rmdir(path)


def _report(fd: int, record: dict) -> None:
    os.write(fd, (json.dumps(record) + "\n").encode())


def _confine_and_exec(cfg: dict, report_fd: int, layers: list[str]) -> None:
    """PID 1 of the sandbox: disk, files, Landlock, rlimits, seccomp, report, exec."""
    libc = _libc()
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    workdir = cfg["workdir"]
    if _disk(workdir, cfg["limits"]["disk_bytes"], cfg["limits"]["max_files"]):
        layers.append(f"disk-cap(tmpfs {cfg['limits']['disk_bytes']} bytes)")
    os.chdir(workdir)
    saved = os.path.join(cfg.get("workspace") or "", "files")
    if cfg.get("workspace") and os.path.isdir(saved):
        _copy_tree(saved, workdir)
    _write_files(workdir, cfg["files"])
    layers += _landlock(workdir, cfg["read_roots"], cfg["read_files"])
    _limits(cfg)
    if _seccomp(cfg["limits"]["allow_subprocesses"]):
        layers.append("syscall-filter(seccomp)")
        if not cfg["limits"]["allow_subprocesses"]:
            layers.append("no-subprocesses(seccomp)")
    layers += ["rlimits", "minimal-env"]
    missing = [layer for layer in cfg["required"] if not any(x.startswith(layer) for x in layers)]
    _report(report_fd, {"enforced": layers, "missing": missing})
    if missing and not cfg["allow_weak"]:
        os._exit(97)
    os.close(report_fd)
    exe = cfg["executable"]
    os.execve(exe, [exe, *cfg.get("python_flags", ["-I"]), "main.py"], cfg["env"])


def _exit_like(status: int) -> None:
    """Leave with the child's wait status: its exit code, or the signal that killed it."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def main(config_fd: int, report_fd: int) -> None:
    """Read the run's configuration, confine, fork PID 1 and wait for it."""
    try:
        with os.fdopen(config_fd, "rb") as fh:
            cfg = json.loads(fh.read())
        layers: list[str] = []
        cfg["dedicated_uid"] = os.geteuid() == 0
        if cfg["dedicated_uid"]:
            if cfg.get("workspace"):
                _own_tree(cfg["workspace"], cfg["uid"])
            layers += _drop_root(cfg["uid"], cfg["workdir"], cfg["read_roots"])
        # die with the harness; set after the uid change, which clears it
        _libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != cfg["harness_pid"]:
            os._exit(99)  # the harness died before that
        layers += _new_namespaces()
    except BaseException as exc:  # the parent reads one line, not a traceback
        _report(report_fd, {"error": f"{type(exc).__name__}: {exc}"})
        os._exit(98)
    pid = os.fork()
    if pid == 0:
        try:
            _confine_and_exec(cfg, report_fd, layers)
        except BaseException as exc:  # the parent reads one line, not a traceback
            _report(report_fd, {"error": f"{type(exc).__name__}: {exc}"})
        os._exit(98)
    _report(report_fd, {"pid": pid})
    if not cfg.get("workspace"):
        os.close(report_fd)
    _, status = os.waitpid(pid, 0)
    if cfg.get("workspace"):
        try:
            _report(report_fd, _save_workspace(cfg["workdir"], cfg["workspace"]))
        except OSError as exc:
            _report(report_fd, {"save_error": f"{type(exc).__name__}: {exc}"})
        os.close(report_fd)
    _exit_like(status)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
