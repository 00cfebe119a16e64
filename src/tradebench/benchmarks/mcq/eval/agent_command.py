"""External coding agents as MCQ solvers: any command that takes a prompt and a folder.

The paper evaluates coding agents that work in a folder of their own for as long as they
need. Here an agent is a command line, e.g. `claude -p {prompt}`: per question it runs once
in a fresh workspace holding the question's files and `PROMPT.md`, and whatever it prints
last is read for the answer letter with the same strict parser as every other solver
(`eval.parse.parse_letter`). Placeholders in the command: `{prompt}` (the prompt text),
`{prompt_file}` (the path of PROMPT.md) and `{workdir}` (the workspace folder).

By default the command runs confined in the code sandbox (`sandbox.workspace.Workspace`,
subprocesses allowed, no network, packages from the wheel directory): right for agents that
talk to nothing, or for a scripted stand-in. An agent that must reach its hosted model
cannot work without a network, so `confined=False` runs it in a plain temporary folder with
the caller's environment, under its own sandbox (the presets' CLIs have one).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from tradebench.benchmarks.mcq.eval.parse import parse_letter
from tradebench.benchmarks.mcq.eval.solve import Posed, SolveResult, user_message
from tradebench.benchmarks.mcq.prompt_files import render
from tradebench.errors import ConfigError
from tradebench.llm.redact import Redactor
from tradebench.llm.types import Usage
from tradebench.sandbox import SandboxLimits
from tradebench.sandbox.workspace import Budget, Workspace

PROMPT_FILE = "PROMPT.md"
PLACEHOLDERS = ("{prompt}", "{prompt_file}", "{workdir}")
PRESETS: dict[str, tuple[str, ...]] = {
    "claude-code": (
        "claude",
        "-p",
        "{prompt}",
        "--output-format",
        "text",
        "--dangerously-skip-permissions",
    ),
    "codex": ("codex", "exec", "--skip-git-repo-check", "--full-auto", "{prompt}"),
    "cursor": ("agent", "-p", "--force", "--output-format", "text", "{prompt}"),
    "copilot": ("copilot", "-p", "{prompt}", "--allow-all-tools"),
}
"""The paper's four coding agents as command lines (their non-interactive modes)."""
KEEP_STDOUT, KEEP_STDERR = 6_000, 3_000

_LAUNCHER = """\
import json, os

argv = json.loads(ARGV)
here = os.getcwd()
prompt = open("PROMPT_FILE", encoding="utf-8").read()
values = {"{workdir}": here, "{prompt_file}": os.path.join(here, "PROMPT_FILE")}
for key, value in values.items():
    argv = [a.replace(key, value) for a in argv]
argv = [a.replace("{prompt}", prompt) for a in argv]
os.execvp(argv[0], argv)
"""


@dataclass(frozen=True)
class AgentCommand:
    """One external agent: its name, command template and per-question limits."""

    name: str
    argv: tuple[str, ...]
    timeout_s: float = 600.0
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    wheels: str | None = None
    read_dirs: tuple[str, ...] = ()
    confined: bool = True

    def solve(self, posed: Posed) -> SolveResult:
        """Run the agent once on `posed` and read its answer letter from what it printed."""
        prompt = render("solver_agent", files=", ".join(sorted(posed.files)) or "no files")
        prompt = prompt + "\n\n" + user_message(posed)
        files = {**posed.files, PROMPT_FILE: prompt.encode("utf-8")}
        start = time.monotonic()
        if self.confined:
            exit_code, timed_out, stdout, stderr = self._confined(files)
        else:
            exit_code, timed_out, stdout, stderr = self._unconfined(files)
        seconds = time.monotonic() - start
        letter = parse_letter(stdout)
        redactor = Redactor.from_env()
        record = {
            "agent": self.name,
            "argv": list(self.argv),
            "confined": self.confined,
            "exit_code": exit_code,
            "timed_out": timed_out,
            "stdout": redactor.text(stdout[-KEEP_STDOUT:]),
            "stderr": redactor.text(stderr[-KEEP_STDERR:]),
        }
        error = None
        if letter is None:
            error = "timed out" if timed_out else "no answer letter in what the agent printed"
        return SolveResult(
            letter=letter,
            parsed=letter is not None,
            refused_tool_call=False,
            parse_error=error,
            raw_reply=redactor.text(stdout[-KEEP_STDOUT:]),
            usage=Usage(),
            latency_s=seconds,
            model_calls=0,
            tool_calls=0,
            transcript=json.dumps(record, ensure_ascii=False, separators=(",", ":")),
        )

    def _confined(self, files: Mapping[str, bytes]) -> tuple[int, bool, str, str]:
        limits = replace(
            self.limits,
            timeout_s=self.timeout_s,
            cpu_s=max(1, int(self.timeout_s) + 1),
            allow_subprocesses=True,
        )
        budget = Budget(calls=1, seconds=self.timeout_s)
        with Workspace(files, limits, budget, self.wheels, self.read_dirs) as ws:
            launcher = _LAUNCHER.replace("ARGV", repr(json.dumps(list(self.argv))))
            result = ws.run(launcher.replace("PROMPT_FILE", PROMPT_FILE))
        return result.exit_code, result.timed_out, result.stdout, result.stderr

    def _unconfined(self, files: Mapping[str, bytes]) -> tuple[int, bool, str, str]:
        folder = tempfile.mkdtemp(prefix="tb-agent-")
        try:
            for name, data in files.items():
                Path(folder, name).write_bytes(data)
            prompt = files[PROMPT_FILE].decode("utf-8")
            argv = [
                a.replace("{workdir}", folder)
                .replace("{prompt_file}", os.path.join(folder, PROMPT_FILE))
                .replace("{prompt}", prompt)
                for a in self.argv
            ]
            try:
                done = subprocess.run(
                    argv,
                    cwd=folder,
                    capture_output=True,
                    text=True,
                    timeout=self.timeout_s,
                    stdin=subprocess.DEVNULL,
                    check=False,
                )
            except subprocess.TimeoutExpired as exc:
                return -9, True, _text(exc.stdout), _text(exc.stderr)
            return done.returncode, False, done.stdout, done.stderr
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode("utf-8", "replace")


def agent_command(
    name: str | None = None,
    command: Sequence[str] = (),
    **settings: object,
) -> AgentCommand:
    """An agent from a preset name or an explicit command line (not both).

    Raises:
        ConfigError: Neither or both given, an unknown preset, or a command that never
            receives the prompt (no placeholder).
    """
    if bool(name) == bool(command):
        raise ConfigError("give an agent preset name or a command, not both or neither")
    if name:
        if name not in PRESETS:
            raise ConfigError(f"unknown agent {name!r}; presets: {', '.join(PRESETS)}")
        argv = PRESETS[name]
    else:
        argv = tuple(command)
        if not any(p in a for a in argv for p in PLACEHOLDERS):
            raise ConfigError(
                "the agent command must take the prompt: put {prompt}, {prompt_file} or "
                "{workdir} in it"
            )
        name = Path(argv[0]).name
    return AgentCommand(name=name, argv=argv, **settings)  # type: ignore[arg-type]
