"""A benchmark whose rule episodes block for a minute, to catch the executor's worker pool
mid-run. Run as `python -m tests.runs.slow_benchmark run SPEC -o RUN_DIR`: it registers
itself, then hands the arguments to the real `tradebench` CLI."""

from __future__ import annotations

import time

from pydantic import BaseModel

from tradebench.benchmarks import BENCHMARKS
from tradebench.runs.protocol import EpisodeRef


class SlowOptions(BaseModel):
    seconds: float = 60.0


class Slow:
    """Each episode sleeps `seconds` (in a pool worker), then records itself."""

    name, options_model, modes, report_sections = "slow", SlowOptions, (), ()

    def expand(self, spec, options, dataset):
        return [
            EpisodeRef(id=f"{a.name}_s{s}", agent=a.name, kind="baseline", seed=s,
                       window=spec.windows[0])
            for a in spec.agents for s in spec.seeds
        ]  # fmt: skip

    async def run_episode(self, ref, ctx):
        time.sleep(ctx.options.seconds)  # blocks the worker process, as real work does
        return ref.record(self.name, "done", n_steps=0)

    def summary_row(self, record, folder):
        return {}


BENCHMARKS.register("slow", Slow())

if __name__ == "__main__":
    from tradebench.cli import app

    app(prog_name="tradebench")
