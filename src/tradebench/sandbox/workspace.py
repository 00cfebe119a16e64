"""A per-question workspace: confined runs that share files, packages and a budget.

Every run is still a fresh confined process (`run_python`), but the working directory starts
with what the previous runs left there and is saved back after each run, so a program can
write a file in one call and run or import it in the next. Packages install offline from a
wheel directory the user provides (`pip install NAME` inside the sandbox reads only that
directory, never an index) into the workspace folder, where later calls import them.
The workspace owns a budget of calls and seconds; `close()` removes every file.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tradebench.errors import ConfigError
from tradebench.sandbox.run import SandboxLimits, SandboxResult, WorkspaceSpec, run_python


@dataclass(frozen=True)
class Budget:
    """Per-question limits: calls, and seconds of sandbox time over all calls."""

    calls: int = 40
    seconds: float = 600.0


class BudgetExhausted(RuntimeError):
    """The question's budget of calls or seconds is spent; no more code runs."""


def pip_env(wheels: str | None) -> dict[str, str]:
    """pip settings for offline installs from `wheels` into the workspace folder itself
    (`--target .`): the script's folder is on sys.path, so later calls import them. (Not the
    user site: a virtual environment without system packages has none, and pip refuses.)"""
    env = {
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_CACHE_DIR": "1",
        "PIP_NO_INPUT": "1",
        "PIP_NO_INDEX": "1",
        "PIP_TARGET": ".",
    }
    if wheels:
        env["PIP_FIND_LINKS"] = wheels
    return env


_PIP_PROGRAM = """\
import os, runpy, sys


def readable(entry):
    try:
        os.listdir(entry) if os.path.isdir(entry) else None
        return True
    except OSError:
        return False


def chmod(path, mode, *args, _chmod=os.chmod, **kwargs):
    try:
        _chmod(path, mode, *args, **kwargs)
    except PermissionError:
        pass  # the sandbox refuses mode changes; installed files stay readable to their owner


os.chmod = chmod
# pip lists what is installed on sys.path; entries the sandbox hides would stop it
sys.path = [p for p in sys.path if readable(p)]
sys.argv = ["pip", "install", *PACKAGES]
runpy.run_module("pip", run_name="__main__", alter_sys=True)
"""


def pip_program(packages: Sequence[str]) -> str:
    """The program that installs `packages` with pip (offline settings come from the env)."""
    return _PIP_PROGRAM.replace("PACKAGES", repr(list(packages)))


class Workspace:
    """One question's confined workspace (use as a context manager; removed on exit)."""

    def __init__(
        self,
        files: Mapping[str, bytes],
        limits: SandboxLimits,
        budget: Budget = Budget(),
        wheels: str | Path | None = None,
        read_dirs: Sequence[str | Path] = (),
    ) -> None:
        if wheels is not None and not Path(wheels).is_dir():
            raise ConfigError(f"wheel directory {wheels} not found")
        self.files, self.limits, self.budget = dict(files), limits, budget
        self.root = tempfile.mkdtemp(prefix="tb-workspace-")
        os.chmod(self.root, 0o700)
        dirs = [str(Path(d).resolve()) for d in read_dirs]
        if wheels is not None:
            dirs.append(str(Path(wheels).resolve()))
        self.spec = WorkspaceSpec(
            root=self.root,
            read_dirs=tuple(dirs),
            env=tuple(sorted(pip_env(str(Path(wheels).resolve()) if wheels else None).items())),
        )
        self.calls, self.seconds = 0, 0.0
        self.last_limits: SandboxLimits | None = None
        """The limits the last call ran under (its timeout is what was left of the budget)."""
        self._first = True

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def remaining_s(self) -> float:
        """Seconds of the budget left."""
        return max(0.0, self.budget.seconds - self.seconds)

    def run(
        self,
        code: str,
        env: Mapping[str, str] | None = None,
        limits: SandboxLimits | None = None,
    ) -> SandboxResult:
        """Run `code` as main.py in the workspace, within what is left of the budget.

        The question's files are written on the first call only; later calls see what the
        earlier ones left (the question's files included, unless the program removed them).

        Raises:
            BudgetExhausted: No call or no second of the budget is left.
        """
        if self.calls >= self.budget.calls or self.remaining_s() <= 0:
            raise BudgetExhausted(
                f"the question's budget is spent ({self.calls} of {self.budget.calls} calls, "
                f"{self.seconds:.0f} of {self.budget.seconds:.0f} s)"
            )
        base = limits or self.limits
        timeout = min(base.timeout_s, self.remaining_s())
        limits = replace(base, timeout_s=timeout, cpu_s=max(1, min(base.cpu_s, int(timeout) + 1)))
        self.last_limits = limits
        files = self.files if self._first else {}
        start = time.monotonic()
        try:
            result = run_python(code, files, limits, env, workspace=self.spec)
        finally:
            self.calls += 1
            self.seconds += time.monotonic() - start
        self._first = self._first and result.saved_files is None
        return result

    def install(self, packages: Sequence[str]) -> SandboxResult:
        """`pip install` the packages from the wheel directory into the workspace (one call).

        Raises:
            ValueError: An item is not a requirement (empty, an option, or with spaces).
            BudgetExhausted: No call or no second of the budget is left.
        """
        for name in packages:
            if not name or name.startswith("-") or any(c.isspace() for c in name):
                raise ValueError(f"not a package requirement: {name!r}")
        return self.run(pip_program(packages))

    def saved(self) -> Path:
        """The folder holding the workspace's saved files (for inspection after a run)."""
        return Path(self.root) / "files"

    def close(self) -> None:
        """Remove the workspace and everything in it."""
        shutil.rmtree(self.root, ignore_errors=True)
