"""Run inside an interpreter with verifiers 0.4: list the default tasks, then run `vf-eval`.

Usage: python verifiers04_eval.py DATASET TASKS_JSON VF_EVAL_ARG...

Writes the verifiers version, the default taskset's tasks (name, key, prompts) and the
message an unknown cell is refused with to TASKS_JSON, then runs verifiers' own eval entry
point with the remaining arguments in this process (it writes `traces.jsonl` under `-o`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(dataset: str, tasks_json: str, eval_args: list[str]) -> None:
    """List the 12 default tasks through verifiers' loader, then evaluate."""
    import verifiers
    from pydantic import ValidationError
    from verifiers.v1.cli.eval.main import main as vf_eval
    from verifiers.v1.utils.loaders import load_taskset, taskset_config_type

    taskset_id = "tradebench-single-stock"
    config = taskset_config_type(taskset_id)(id=taskset_id, dataset=dataset)
    tasks = [
        {"name": t.data.name, "key": t.key, "idx": t.data.idx, "prompt": t.data.prompt}
        for t in load_taskset(config)
    ]
    try:
        taskset_config_type(taskset_id)(id=taskset_id, dataset=dataset, cells=["zzz_main"])
        refused = None
    except ValidationError as exc:
        refused = exc.errors()[0]["msg"]
    listing = {"version": verifiers.__version__, "tasks": tasks, "unknown_cell": refused}
    Path(tasks_json).parent.mkdir(parents=True, exist_ok=True)
    Path(tasks_json).write_text(json.dumps(listing))
    vf_eval(eval_args)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
