"""`tradebench demo`'s account of what the model did, on the scripted report run: counted
from the trace and orders, checked against what the loopback server was scripted to do
and what it received."""

from __future__ import annotations

import pandas as pd

from tradebench.demo import model_activity


def test_model_activity_counts_what_the_model_did(model_run) -> None:
    activity = model_activity(model_run.live)
    assert len(activity) == 2  # the blinded and the bright model episode
    for row in activity.itertuples(index=False):
        # per episode: step 1 one refusal then a valid submission, step 2 four refusals and
        # the fallback, step 3 valid at once
        assert (row.steps, row.submissions, row.valid) == (3, 7, 2)
        assert row.research_calls == 0 and row.rejected_by_code != "-"
        assert row.valid_non_empty == 2
    assert int(activity["model_calls"].sum()) == len(model_run.requests)
    summary = pd.read_parquet(model_run.live / "summary.parquet")
    llm = summary[summary["kind"] == "llm"].sort_values(["mode", "mask"])
    filled = [
        int(
            pd.read_parquet(model_run.live / "episodes" / e / "orders.parquet")["status"]
            .isin(["filled", "partial"])
            .sum()
        )
        for e in llm["episode_id"]
    ]
    assert sorted(activity["filled_orders"]) == sorted(filled) and sum(filled) > 0
