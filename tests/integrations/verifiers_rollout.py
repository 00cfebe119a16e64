"""Run inside an interpreter with verifiers 0.3.x: evaluate one single-stock task.

Usage: python verifiers_rollout.py DATASET BASE_URL OUT_JSON EPISODE_LENGTH

Loads the environment by its module id through `vf.load_environment`, evaluates the first
task against the OpenAI-compatible server at BASE_URL, and writes what the test checks.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path


def main(dataset: str, base_url: str, out: str, length: int) -> None:
    """Evaluate task 0 and write reward, metrics, info and the rubric to `out`."""
    import verifiers as vf

    os.environ.setdefault("TB_LOOPBACK_KEY", "loopback")
    env = vf.load_environment(
        "tradebench.integrations.verifiers_env",
        dataset=dataset,
        episode_length=length,
        mask="blinded",
    )
    client = vf.ClientConfig(api_base_url=base_url, api_key_var="TB_LOOPBACK_KEY", max_retries=0)
    result = asyncio.run(
        env.evaluate(
            client=client,
            model="loopback",
            num_examples=1,
            rollouts_per_example=1,
            max_concurrent=1,
            on_progress=lambda *a: None,
        )
    )
    output = result["outputs"][0]
    rubrics = getattr(env.rubric, "rubrics", None) or [env.rubric]  # a group once monitors join
    payload = {
        "version": vf.__version__,
        "rows": len(env.get_eval_dataset()),
        "rubric": {
            "names": [f.__name__ for r in rubrics for f in r.funcs],
            "weights": [w for r in rubrics for w in r.weights],
        },
        "reward": output["reward"],
        "metrics": output["metrics"],
        "info": output["info"],
        "error": None if output.get("error") is None else str(output.get("error")),
        "stop_condition": output.get("stop_condition"),
    }
    Path(out).write_text(json.dumps(payload, default=str))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
