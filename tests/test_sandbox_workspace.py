"""A per-question workspace: files persist across confined calls, packages install offline
from a local wheel directory, the budget holds, and nothing is left behind."""

from __future__ import annotations

import base64
import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from tradebench.sandbox import SandboxLimits
from tradebench.sandbox.workspace import Budget, BudgetExhausted, Workspace

LIMITS = SandboxLimits(timeout_s=60, cpu_s=60)


def tiny_wheel(folder: Path, name: str = "tinycalc", body: str = "") -> Path:
    """Write a pure-Python wheel (the zip format of PEP 427) holding one module."""
    code = (body or "def double(x):\n    return 2 * x\n").encode()
    info = f"{name}-0.1.dist-info"
    files = {
        f"{name}/__init__.py": code,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }

    def digest(data: bytes) -> str:
        raw = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        return f"sha256={raw.decode()}"

    record = "".join(f"{n},{digest(d)},{len(d)}\n" for n, d in files.items())
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    path = folder / f"{name}-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for n, d in files.items():
            archive.writestr(n, d)
        archive.writestr(f"{info}/RECORD", record + f"{info}/RECORD,,\n")
    path.chmod(0o644)
    return path


def test_files_persist_across_calls_and_the_workspace_is_removed() -> None:
    with Workspace({"bars.csv": b"date,close\n2020-01-02,1.5\n"}, LIMITS) as ws:
        first = ws.run(
            "open('helper.py', 'w').write('def answer():\\n    return 41 + 1\\n')\n"
            "import os; print(sorted(os.listdir('.')))"
        )
        assert first.ok, first.stderr
        assert first.stdout.strip() == "['bars.csv', 'helper.py', 'main.py']"
        second = ws.run("import helper; print(helper.answer(), open('bars.csv').read()[:4])")
        assert second.ok, second.stderr
        assert second.stdout.split() == ["42", "date"]
        root = Path(ws.root)
        assert (ws.saved() / "helper.py").is_file()
    assert not root.exists()


def test_a_link_or_a_timeout_saves_nothing_of_the_host() -> None:
    """The copy back never follows a link; a run stopped at its timeout keeps the old files."""
    with Workspace({}, LIMITS) as ws:
        made = ws.run("import os; os.symlink('/etc/passwd', 'leak'); open('kept', 'w').write('1')")
        assert made.ok, made.stderr
        assert sorted(os.listdir(ws.saved())) == ["kept", "main.py"]
        slow = ws.run(
            "open('late', 'w').write('x')\nwhile True:\n    pass",
            limits=SandboxLimits(timeout_s=2, cpu_s=2),
        )
        assert slow.timed_out and slow.saved_files is None
        assert sorted(os.listdir(ws.saved())) == ["kept", "main.py"]


def test_packages_install_offline_from_a_local_wheel_directory(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    tiny_wheel(wheels)
    with Workspace({}, LIMITS, wheels=wheels) as ws:
        before = ws.run("import tinycalc")
        assert before.exit_code == 1 and "No module named 'tinycalc'" in before.stderr
        installed = ws.install(["tinycalc"])
        assert installed.ok, installed.stdout + installed.stderr
        assert "Successfully installed tinycalc-0.1" in installed.stdout
        after = ws.run("import tinycalc; print(tinycalc.double(21))")
        assert after.ok and after.stdout.strip() == "42", after.stderr
        missing = ws.install(["requests-oauthlib"])  # not in the wheel directory: no index
        assert missing.exit_code != 0 and "No matching distribution" in missing.stderr
        said = missing.stdout + missing.stderr
        assert "/simple/" not in said and "Retrying" not in said  # no index was ever tried
        with pytest.raises(ValueError, match="not a package requirement"):
            ws.install(["--index-url=http://example.org"])


def test_the_budget_of_calls_and_seconds_holds() -> None:
    with Workspace({}, LIMITS, Budget(calls=2, seconds=600)) as ws:
        assert ws.run("print(1)").ok and ws.run("print(2)").ok
        with pytest.raises(BudgetExhausted, match="2 of 2 calls"):
            ws.run("print(3)")
    with Workspace({}, LIMITS, Budget(calls=10, seconds=2)) as ws:
        spent = ws.run("while True:\n    pass")  # the call's limit is what is left: 2 s
        assert spent.timed_out
        used = ws.last_limits
        assert used is not None and used.timeout_s <= 2 < LIMITS.timeout_s  # not LIMITS' 60 s
        assert used.cpu_s <= 3
        with pytest.raises(BudgetExhausted, match="budget is spent"):
            ws.run("print(1)")
