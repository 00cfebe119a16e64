"""The demo's default thread count: a core made busy a moment ago is not counted free.

The 1-minute load average this used to read lags: a core that started spinning a second
ago still looked free, and one that stopped (an install's compiler) still looked busy for a
minute. The oracle is a real process spinning on one of this process's cores."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tradebench.llm.local import free_cores

SPIN = "import time\nend = time.time() + 20\nwhile time.time() < end: pass\n"


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="needs Linux's /proc/stat")
def test_a_core_busy_now_is_not_free() -> None:
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("needs two cores: with one, one core is always reported free")
    spinner = subprocess.Popen([sys.executable, "-c", SPIN])
    try:
        os.sched_setaffinity(spinner.pid, {allowed[0]})
        time.sleep(0.3)  # the spinner is running
        assert free_cores() <= len(allowed) - 1
    finally:
        spinner.kill()
        spinner.wait()
