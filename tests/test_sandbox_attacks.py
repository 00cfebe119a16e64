"""Attacks on the code sandbox, each as model-written code would try it.

Every test runs the real `run_python` and checks the property from outside the sandbox: the
host file's mode, a listener that must receive nothing, the process table, the harness's own
memory. The layers are Linux's (namespaces, Landlock, seccomp); on a kernel without one of them
the sandbox refuses to run, which `test_a_missing_layer_refuses_unless_opted_in` reproduces.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from tradebench.sandbox import SandboxLimits, run_python

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox needs Linux"),
]
x86_64 = pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 machine code")


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory anyone may traverse and write (so only the sandbox can stop an attack)."""
    path = Path(tempfile.mkdtemp(prefix="tb-attack-", dir="/tmp"))
    path.chmod(0o777)
    yield path
    subprocess.run(["rm", "-rf", str(path)], check=False)


def _processes_with(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if token.encode() in cmdline:
                found.append(int(entry.name))
    return found


# ------------------------------------------------------------------------ processes
FORK_INT80 = """
import ctypes, mmap, os
buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
buf.write(bytes([0xB8, 0x02, 0, 0, 0, 0xCD, 0x80, 0xC3]))  # mov eax, 2 (fork); int 0x80; ret
fork32 = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))
pids = [fork32() for _ in range(40)]
print("forked", pids, flush=True)
"""


@x86_64
def test_fork_through_the_32_bit_abi_kills_the_program() -> None:
    result = run_python(FORK_INT80)
    assert "no-subprocesses(seccomp)" in result.enforced
    assert result.exit_code == -signal.SIGSYS  # a foreign ABI ends the process
    assert "forked" not in result.stdout


@x86_64
def test_the_x32_abi_kills_the_program() -> None:
    code = "import ctypes\nctypes.CDLL(None).syscall(0x40000000 | 57)\nprint('forked')"
    result = run_python(code)
    assert result.exit_code == -signal.SIGSYS
    assert "forked" not in result.stdout


def test_no_process_by_any_native_route() -> None:
    code = textwrap.dedent(
        """
        import multiprocessing, os, subprocess
        for name, attempt in [
            ("fork", os.fork),
            ("posix_spawn", lambda: os.posix_spawn("/bin/true", ["true"], {})),
            ("subprocess", lambda: subprocess.run(["/bin/true"])),
            ("multiprocessing", lambda: multiprocessing.Process(target=print).start()),
        ]:
            try:
                attempt()
                print(name, "started")
            except OSError as exc:
                print(name, type(exc).__name__)
        """
    )
    result = run_python(code)
    assert result.ok, result.stderr
    lines = result.stdout.split("\n")
    assert not [line for line in lines if line.endswith("started")], result.stdout
    assert len([line for line in lines if line]) == 4


def test_descendants_that_leave_the_session_die_with_the_sandbox() -> None:
    token = f"{secrets.randbelow(10**6)}.{secrets.randbelow(10**6):06d}"
    code = textwrap.dedent(
        f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv("/bin/sleep", ["sleep", "{token}"])
            os._exit(0)
        print("parent spins", flush=True)
        while True:
            pass
        """
    )
    limits = SandboxLimits(timeout_s=1.5, cpu_s=30, allow_subprocesses=True)
    result = run_python(code, limits=limits)
    assert result.timed_out and "parent spins" in result.stdout
    assert "pid-namespace(kill-all)" in result.enforced
    assert _processes_with(token) == []  # the detached sleeper is gone when the call returns


def test_a_program_that_exits_leaving_a_daemon_returns_and_takes_it_along() -> None:
    token = f"{secrets.randbelow(10**6)}.{secrets.randbelow(10**6):06d}"
    code = textwrap.dedent(
        f"""
        import os
        if os.fork() == 0:
            os.setsid()
            os.execv("/bin/sleep", ["sleep", "{token}"])  # holds stdout open
        print("bye")
        """
    )
    result = run_python(code, limits=SandboxLimits(timeout_s=60, allow_subprocesses=True))
    assert result.ok and not result.timed_out and result.stdout == "bye\n"
    assert _processes_with(token) == []


# ------------------------------------------------------------------------ sockets
def _stop(server: socket.socket, thread: threading.Thread) -> None:
    """Wake the listener's accept (a connection that sends nothing) and close."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as waker:
        waker.connect(server.getsockname())
    thread.join()
    server.close()


def _listener(sock: socket.socket, received: list[bytes]) -> None:
    sock.settimeout(30)
    try:
        conn, _ = sock.accept()
    except OSError:
        return
    with conn:
        data = conn.recv(1024)
        if data:
            received.append(data)


def test_a_unix_socket_at_a_host_path_is_unreachable(open_dir: Path) -> None:
    path = open_dir / "service.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    path.chmod(0o777)
    server.listen(1)
    received: list[bytes] = []
    thread = threading.Thread(target=_listener, args=(server, received))
    thread.start()
    code = textwrap.dedent(
        f"""
        import socket
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect({str(path)!r})
        s.sendall(b"escaped")
        """
    )
    try:
        result = run_python(code)
    finally:
        _stop(server, thread)
    assert received == []
    assert result.exit_code != 0 and "PermissionError" in result.stderr


def test_an_abstract_unix_socket_is_unreachable() -> None:
    name = f"\0tb-attack-{secrets.token_hex(6)}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(name)
    server.listen(1)
    received: list[bytes] = []
    thread = threading.Thread(target=_listener, args=(server, received))
    thread.start()
    code = f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({name!r})\ns.send(b'x')"
    try:
        result = run_python(code)
    finally:
        _stop(server, thread)
    assert received == [] and result.exit_code != 0


def test_other_local_socket_families_are_refused() -> None:
    code = textwrap.dedent(
        """
        import socket
        for family in ("AF_UNIX", "AF_NETLINK", "AF_PACKET", "AF_VSOCK"):
            try:
                socket.socket(getattr(socket, family), socket.SOCK_DGRAM).close()
                print(family, "opened")
            except OSError as exc:
                print(family, type(exc).__name__)
        """
    )
    result = run_python(code)
    assert result.ok, result.stderr
    assert "opened" not in result.stdout, result.stdout
    assert result.stdout.count("PermissionError") == 4


def test_io_uring_is_refused() -> None:
    code = "import ctypes\nbuf = ctypes.create_string_buffer(120)\n"
    code += "print(ctypes.CDLL(None, use_errno=True).syscall(425, 8, buf), ctypes.get_errno())"
    result = run_python(code)
    assert result.stdout.split() == ["-1", "1"]  # io_uring_setup: EPERM


# ------------------------------------------------------------------------ files and identity
def test_a_host_file_keeps_its_mode_owner_and_times(open_dir: Path) -> None:
    target = open_dir / "config.txt"
    target.write_text("host")
    target.chmod(0o644)
    before = target.stat()
    code = textwrap.dedent(
        f"""
        import os
        for name, attempt in [
            ("chmod", lambda: os.chmod({str(target)!r}, 0o777)),
            ("chown", lambda: os.chown({str(target)!r}, os.getuid(), os.getgid())),
            ("utime", lambda: os.utime({str(target)!r}, (0, 0))),
            ("rename", lambda: os.rename({str(target)!r}, "stolen.txt")),
            ("unlink", lambda: os.unlink({str(target)!r})),
            ("write", lambda: open({str(target)!r}, "a").write("x")),
        ]:
            try:
                attempt()
                print(name, "done")
            except OSError as exc:
                print(name, type(exc).__name__)
        """
    )
    result = run_python(code)
    assert result.ok, result.stderr
    assert "done" not in result.stdout, result.stdout
    after = target.stat()
    assert stat.S_IMODE(after.st_mode) == 0o644
    assert (after.st_uid, after.st_gid, after.st_mtime_ns) == (
        before.st_uid,
        before.st_gid,
        before.st_mtime_ns,
    )
    assert target.read_text() == "host"


def test_metadata_calls_are_refused_even_inside_the_directory() -> None:
    """The seccomp layer on its own: for an ordinary user (no dedicated uid) it is what
    stops chmod of the user's own files outside the directory."""
    code = textwrap.dedent(
        """
        import os
        open("mine.txt", "w").write("x")
        for name, attempt in [
            ("chmod", lambda: os.chmod("mine.txt", 0o600)),
            ("utime", lambda: os.utime("mine.txt", (0, 0))),
            ("chown", lambda: os.chown("mine.txt", os.getuid(), os.getgid())),
        ]:
            try:
                attempt()
                print(name, "done")
            except PermissionError:
                print(name, "refused")
        """
    )
    result = run_python(code)
    assert result.stdout.split() == ["chmod", "refused", "utime", "refused", "chown", "refused"]


def test_other_processes_and_roots_home_are_unreadable() -> None:
    os.environ["TB_ATTACK_SECRET"] = "sk-must-not-leak"
    try:
        code = textwrap.dedent(
            f"""
            import os
            for path in ("/proc/{os.getpid()}/environ", "/proc/1/environ", "/root"):
                try:
                    data = open(path, "rb").read() if "proc" in path else os.listdir(path)
                    print(path, "read", "sk-must-not-leak" in str(data))
                except OSError as exc:
                    print(path, type(exc).__name__)
            """
        )
        result = run_python(code)
    finally:
        del os.environ["TB_ATTACK_SECRET"]
    assert result.ok, result.stderr
    reads = result.stdout.splitlines()
    assert len(reads) == 3
    assert "sk-must-not-leak" not in result.stdout
    assert not [line for line in reads if " read " in line], result.stdout


def test_killing_the_harness_is_refused() -> None:
    code = textwrap.dedent(
        f"""
        import os, signal
        for pid in ({os.getpid()}, os.getppid(), -1):
            try:
                os.kill(pid, signal.SIGKILL)
                print(pid, "sent")
            except OSError as exc:
                print(pid, type(exc).__name__)
        """
    )
    result = run_python(code)
    assert result.ok, result.stderr
    # the pytest process is alive (this line runs) and the harness's pid does not exist there
    assert f"{os.getpid()} ProcessLookupError" in result.stdout


# ------------------------------------------------------------------------ output and disk
def test_an_output_flood_is_capped_while_it_streams() -> None:
    code = "import sys\nchunk = b'x' * (1 << 20)\nfor _ in range(300):\n"
    code += "    sys.stdout.buffer.write(chunk)\n"
    limits = SandboxLimits(output_bytes=1 << 20)
    tracemalloc.start()
    try:
        result = run_python(code, limits=limits)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.ok and result.output_truncated
    assert len(result.stdout) == 1 << 20
    assert peak < 32 * (1 << 20)  # 300 MiB went through; the harness held at most a few


def test_the_total_disk_is_capped() -> None:
    code = textwrap.dedent(
        """
        total = 0
        try:
            for i in range(12):
                with open(f"f{i}.bin", "wb") as fh:
                    for _ in range(16):
                        fh.write(b"x" * (1 << 20))
                        fh.flush()
                        total += 1 << 20
        except OSError as exc:
            print(type(exc).__name__, exc.errno)
        print(total)
        """
    )
    limits = SandboxLimits(disk_bytes=64 << 20, file_bytes=32 << 20)
    result = run_python(code, limits=limits)
    assert any(layer.startswith("disk-cap") for layer in result.enforced)
    *_, total = result.stdout.split()
    assert int(total) <= 64 << 20  # 192 MiB were asked for in files under the per-file cap
    assert "OSError 28" in result.stdout  # ENOSPC


# ------------------------------------------------------------------------ memory outside RLIMIT_AS
HOARD = """
import ctypes, os, sys
CHUNK, GOAL = 16 << 20, 192 << 20
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_int)
libc.shmdt.argtypes = (ctypes.c_void_p,)
kept = []

def check(ret, what):
    if ret == -1 or ret is None or ret == ctypes.c_void_p(-1).value:
        raise OSError(ctypes.get_errno(), what)
    return ret

def memfd():
    fd = os.memfd_create("hoard")
    kept.append(fd)
    os.write(fd, b"x" * CHUNK)  # page cache of an anonymous file: not address space

def sysv_shm():
    seg = check(libc.shmget(0, CHUNK, 0o1600), "shmget")  # IPC_PRIVATE, IPC_CREAT | 0600
    addr = check(libc.shmat(seg, None, 0), "shmat")
    ctypes.memset(addr, 1, CHUNK)
    libc.shmdt(addr)  # detached: the pages stay with the segment, outside the address space

def posix_shm():
    fd = os.open(f"/dev/shm/hoard{len(kept)}", os.O_CREAT | os.O_RDWR, 0o600)
    kept.append(fd)
    os.write(fd, b"x" * CHUNK)

def sysv_msg():
    class Msg(ctypes.Structure):
        _fields_ = (("mtype", ctypes.c_long), ("text", ctypes.c_char * 8192))
    msg = Msg(1, b"x" * 8191)
    for _ in range(CHUNK // 16384):
        queue = check(libc.msgget(0, 0o1600), "msgget")
        for _ in range(2):
            check(libc.msgsnd(queue, ctypes.byref(msg), 8192, 0o4000), "msgsnd")

route = {"memfd": memfd, "sysv_shm": sysv_shm, "posix_shm": posix_shm, "sysv_msg": sysv_msg}
held = 0
try:
    while held < GOAL:
        route[sys.argv[1] if len(sys.argv) > 1 else ROUTE]()
        held += CHUNK
except OSError as exc:
    print("refused", exc.errno)
print(held)
"""


@x86_64
@pytest.mark.parametrize("route", ["memfd", "sysv_shm", "posix_shm", "sysv_msg"])
def test_memory_outside_the_address_space_is_refused(route: str) -> None:
    """memfd pages, SysV shared memory and message queues and files in /dev/shm are not
    address space: RLIMIT_AS does not count them, so each would let a program hold more than
    its memory cap (four sandboxed calls at once on a machine without swap)."""
    limits = SandboxLimits(memory_bytes=128 << 20, file_bytes=32 << 20)
    result = run_python(HOARD.replace("ROUTE]", f"{route!r}]"), limits=limits)
    assert result.ok, result.stderr
    *_, held = result.stdout.split()
    assert int(held) == 0, result.stdout  # 192 MiB asked for against a 128 MiB cap
    assert "refused" in result.stdout


# ------------------------------------------------------------------------ the record
def test_the_enforced_list_cannot_be_forged() -> None:
    code = textwrap.dedent(
        """
        import json, os
        forged = json.dumps({"enforced": ["forged"], "missing": []}) + "\\n"
        open(".sandbox_enforced.json", "w").write(json.dumps(["forged"]))
        for fd in range(3, 64):
            try:
                os.write(fd, forged.encode())
            except OSError:
                pass
        """
    )
    result = run_python(code)
    assert result.ok, result.stderr
    assert "forged" not in result.enforced
    assert "filesystem(landlock-abi" in " ".join(result.enforced)


NO_LANDLOCK = """
import ctypes, json, sys
# a seccomp filter that answers Landlock's syscalls with ENOSYS, as a kernel without it does
ins = [(0x20, 0, 0, 0), (0x35, 0, 3, 444), (0x35, 2, 0, 447), (0x06, 0, 0, 0x00050000 | 38),
       (0x06, 0, 0, 0x7FFF0000), (0x06, 0, 0, 0x7FFF0000)]
class F(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]
class P(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(F))]
arr = (F * len(ins))(*[F(*i) for i in ins])
libc = ctypes.CDLL(None)
assert libc.prctl(38, 1, 0, 0, 0) == 0 and libc.prctl(22, 2, ctypes.byref(P(len(ins), arr))) == 0
from tradebench.errors import SandboxUnavailable
from tradebench.sandbox import SandboxLimits, run_python
try:
    run_python("print('ran')")
    print(json.dumps({"refused": None}))
except SandboxUnavailable as exc:
    print(json.dumps({"refused": str(exc)}))
weak = run_python("print('ran')", limits=SandboxLimits(allow_weak=True))
print(json.dumps({"stdout": weak.stdout, "missing": weak.missing, "enforced": weak.enforced}))
"""


def test_a_missing_layer_refuses_unless_opted_in() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRADEBENCH_SANDBOX_ALLOW_WEAK"}
    out = subprocess.run(
        [sys.executable, "-c", NO_LANDLOCK], capture_output=True, text=True, env=env, check=True
    )
    refused, weak = (json.loads(line) for line in out.stdout.splitlines())
    assert refused["refused"] is not None
    assert (
        "filesystem(landlock" in refused["refused"] and "--allow-weak-sandbox" in refused["refused"]
    )
    assert "\n" not in refused["refused"]
    assert weak["stdout"] == "ran\n"
    assert weak["missing"] == ["filesystem(landlock"]
    assert not any(layer.startswith("filesystem") for layer in weak["enforced"])


# ------------------------------------------------------------------------ seen from outside
def _find_by_environ(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _wait_for(condition, attempts: int = 3000) -> bool:  # type: ignore[no-untyped-def]
    """Poll `condition` (a liveness wait that fails the test instead of hanging it)."""
    for _ in range(attempts):
        if condition():
            return True
        threading.Event().wait(0.01)
    return False


def test_the_program_runs_under_an_unprivileged_uid_seen_from_outside() -> None:
    token = f"tb-uid-{secrets.token_hex(8)}"
    results: list = []
    limits = SandboxLimits(timeout_s=120, cpu_s=120)
    thread = threading.Thread(
        target=lambda: results.append(
            run_python(
                "import sys\nsys.stdin.read()\nwhile True: pass",
                limits=limits,
                env={"TB_TOKEN": token},
            )
        )
    )
    thread.start()
    try:
        assert _wait_for(lambda: bool(_find_by_environ(token)))
        (pid,) = _find_by_environ(token)
        status = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        )
        uids = status["Uid"].split()
        gids = status["Gid"].split()
        assert len(set(uids)) == 1 and uids[0] != "0"  # real, effective, saved, fs
        assert len(set(gids)) == 1 and gids[0] != "0"
        assert status["Groups"].strip() == ""
        assert status["CapEff"].strip() == "0000000000000000"
        assert status["Seccomp"].strip() == "2" and status["NoNewPrivs"].strip() == "1"
    finally:
        for pid in _find_by_environ(token):
            os.kill(pid, signal.SIGKILL)
        thread.join()
    (result,) = results
    assert result.exit_code == -signal.SIGKILL


HARNESS = """
import os
from tradebench.sandbox import SandboxLimits, run_python
lines = [
    "import os",
    "if os.fork() == 0:",
    "    os.setsid()",
    f"    os.execv('/bin/sleep', ['sleep', {os.environ['TB_TOKEN']!r}])",
    "while True:",
    "    pass",
]
limits = SandboxLimits(timeout_s=300, cpu_s=300, allow_subprocesses=True)
run_python("\\n".join(lines), limits=limits)
"""


def test_the_sandbox_dies_with_a_killed_harness() -> None:
    token = f"{secrets.randbelow(10**6)}.{secrets.randbelow(10**6):06d}"
    # the token only in the sleeper's command line, not in the harness's
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS], env={**os.environ, "TB_TOKEN": token}
    )
    try:
        assert _wait_for(lambda: bool(_processes_with(token)))
    finally:
        harness.kill()  # kill -9 mid-run: no cleanup code of ours runs
        harness.wait()
    assert _wait_for(lambda: not _processes_with(token))


AS_USER = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
from tradebench.sandbox import REQUIRED_LAYERS, run_python
mine = os.path.join(sys.argv[2], "mine.txt")
open(mine, "w").write("mine")
os.chmod(mine, 0o644)
code = "\\n".join([
    "import os",
    "try:",
    f"    os.chmod({mine!r}, 0o777)",
    "    print('changed')",
    "except OSError as exc:",
    "    print(type(exc).__name__)",
])
result = run_python(code)
print(json.dumps({"stdout": result.stdout, "enforced": result.enforced,
                  "mode": oct(os.stat(mine).st_mode & 0o777), "required": REQUIRED_LAYERS}))
"""


def _others_can_read(path: Path) -> bool:
    """Whether a user other than the owner may list `path` and traverse every folder to it."""
    folders = [path, *path.parents]
    if not os.stat(path).st_mode & stat.S_IROTH:
        return False
    return all(os.stat(folder).st_mode & stat.S_IXOTH for folder in folders)


def _system_python() -> str | None:
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        probe = (
            subprocess.run(
                [
                    "setpriv",
                    "--reuid=65534",
                    "--regid=65534",
                    "--clear-groups",
                    candidate,
                    "-c",
                    "import sys; assert sys.version_info >= (3, 11)",
                ],
                capture_output=True,
                check=False,
            )
            if os.path.exists(candidate)
            else None
        )
        if probe is not None and probe.returncode == 0:
            return candidate
    return None


def test_an_ordinary_user_gets_every_layer_and_keeps_its_own_files(open_dir: Path) -> None:
    """As an ordinary user there is no dedicated uid: the program keeps the user's uid, and
    the seccomp filter is what stops it changing the user's own files outside."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the harness as an ordinary user")
    python = _system_python()
    if python is None:
        pytest.skip("no Python >= 3.11 that an ordinary user can run")
    src = str(Path(__file__).resolve().parents[1] / "src")
    if not _others_can_read(Path(src)):
        pytest.skip(f"an ordinary user cannot read {src} (a folder above it is private)")
    cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c"]
    out = subprocess.run(
        [*cmd, AS_USER, src, str(open_dir)], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["stdout"] == "PermissionError\n"
    assert report["mode"] == "0o644"
    for layer in report["required"]:
        assert any(x.startswith(layer) for x in report["enforced"]), report["enforced"]
