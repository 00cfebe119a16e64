"""The README's first command as a user feels it: `tradebench demo` end to end.

Runs the demo (the bundled local model when its extra is installed) as a whole process in a
scratch folder and prints its wall and CPU seconds, the machine's load before it started,
the plan line the demo printed first, and whether it printed progress while it ran (a live
display is drawn on a terminal only, so here the plan line and the final table are what a
log shows). Target: under 3 minutes on a quiet 2-core machine.

Run: python perf/demo.py [--threads N]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 180.0


def main() -> None:
    """Run the demo once and print what it cost."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, help="passed to `tradebench demo --threads`")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "tradebench.cli", "demo", "-o", str(Path(tmp) / "demo")]
        if args.threads:
            cmd += ["--threads", str(args.threads)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = done.stdout.splitlines()
    plan = next((line for line in lines if line.startswith("demo:")), "(no plan line)")
    print(f"exit {done.returncode}; load before {load:.2f} on {os.cpu_count()} cores")
    print(f"wall {wall:.1f} s, CPU {cpu:.1f} s (target: wall < {TARGET_S:.0f} s)")
    print(f"plan line: {plan}")
    print(f"report line: {next((x for x in lines if x.startswith('report:')), '(none)')}")
    if done.returncode != 0:
        print(done.stderr[-2000:])


if __name__ == "__main__":
    main()
