"""The paper's experiment: two analyst sets (the rule analysts, and a scripted model playing
the news analyst through the loopback server) x two constructors, the swap table, and the
mandate compiled by a model from the spec."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.benchmarks.mandate.conftest import example_spec, run
from tradebench.benchmarks.mandate.certificate import EpisodeCertificate
from tradebench.benchmarks.mandate.model_analysts import TOOL_NAME
from tradebench.benchmarks.mandate.report import swap_effects, swap_table
from tradebench.cli import app
from tradebench.data.dataset import load_dataset
from tradebench.errors import ConfigError
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply, default_responder
from tradebench.report.load import load_run
from tradebench.risk import compile_mandate
from tradebench.risk.compile_llm import TOOL_NAME as COMPILE_TOOL
from tradebench.view import MarketView

pytest.importorskip("cvxpy", reason="needs cvxpy, the mandate extra: pip install -e '.[mandate]'")

LIKED = ("COIN", "NFLX", "KO", "PG", "JNJ", "WMT")
"""Names the scripted analyst scores +0.9 whenever it is asked about them."""
WINDOW = "20250602-20250804"
LINE = re.compile(r"^  \[([^\]]+)\] (\d{4}-\d{2}-\d{2} \d{2}:\d{2}) UTC", re.MULTILINE)


def _user(request: RecordedRequest) -> str:
    return next(m["content"] for m in request.body["messages"] if m["role"] == "user")


def _ids_by_name(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("  [") and current:
            out[current].append(line[3 : line.index("]")])
        elif ":" in line and not line.startswith(" "):
            current = line.split(":")[0]
            out.setdefault(current, [])
    return out


def analyst_responder(future_id: str):
    """Score the liked names +0.9, citing the ids shown for them and one id that is not
    visible yet (a citation violation per signal)."""

    def respond(request: RecordedRequest) -> Reply:
        if request.forced_tool() != TOOL_NAME:
            return default_responder(request)
        names = request.tool_schemas()[TOOL_NAME]["properties"]["signals"]["items"]
        allowed = set(names["properties"]["symbol"]["enum"])
        shown = _ids_by_name(_user(request))
        signals = [
            {
                "symbol": n,
                "score": 0.9,
                "confidence": 1.0,
                "cited": [*shown.get(n, [])[:2], future_id],
            }
            for n in LIKED
            if n in allowed
        ]
        return Reply.tool(TOOL_NAME, {"signals": signals})

    return respond


@pytest.fixture(scope="module")
def swap_run(mandate_dataset: Path, tmp_path_factory: pytest.TempPathFactory):
    """Rule analysts vs the scripted model news analyst (with the technical rule analyst),
    under equal weight and score weighting, K = 5, three daily decisions."""
    ds = load_dataset(mandate_dataset)
    future = str(MarketView(ds, "2025-07-15").records(symbols="COIN", kinds="news").iloc[-1, 0])
    out = tmp_path_factory.mktemp("swap") / "run"
    with LoopbackServer(responder=analyst_responder(future)) as server:
        spec = example_spec(
            mandate_dataset,
            pool_sizes=[5],
            max_steps=3,
            analyst_sets={
                "rules": ["technical", "news", "filings"],
                "model": [{"role": "news", "agent": "analyst"}, "technical"],
            },
        )
        spec["agents"] = [
            {"name": "ew", "baseline": "equal_weight"},
            {"name": "score", "baseline": "score_weighted"},
            {
                "name": "analyst",
                "provider": "openai",
                "model": "scripted-analyst",
                "base_url": server.openai_url,
                "knowledge_cutoff": "2023-06-01",
            },
        ]
        spec["modes"] = ["daily"]
        run(spec, out)
        requests = list(server.requests)
    return out, requests, future


def test_the_swap_grid_and_table(swap_run) -> None:
    out, _, _ = swap_run
    summary = pd.read_parquet(out / "summary.parquet")
    cells = summary[summary["analyst_set"].notna()]
    assert sorted(zip(cells["agent"], cells["analyst_set"], strict=True)) == [
        ("ew", "model"),
        ("ew", "rules"),
        ("score", "model"),
        ("score", "rules"),
    ]
    assert "analyst" not in set(summary["agent"])  # an analyst, not a constructor
    pools = {
        r.analyst_set: json.loads((out / "episodes" / r.episode_id / "episode.json").read_text())[
            "pool"
        ]
        for r in cells.itertuples()
    }
    # the liked names lead the model set's aggregation (+0.9 beside the technical score)
    assert pools["model"] != pools["rules"] and len(set(pools["model"]) & set(LIKED)) >= 4
    ew = cells.groupby("analyst_set")["ew_total_return"].agg(["min", "max"])
    assert (ew["min"] == ew["max"]).all()  # one same-pool EW per set, whatever the constructor
    assert ew.loc["model", "min"] != ew.loc["rules", "min"]  # the analysts chose the pool
    table = swap_table(load_run(out)).set_index("analyst_set")
    for s in ("model", "rules"):
        for agent in ("ew", "score"):
            row = cells[(cells["analyst_set"] == s) & (cells["agent"] == agent)].iloc[0]
            cell = table.loc[s, agent]
            assert cell.startswith(f"{row['total_return']:+.2%}") and "[" in cell
            assert row["daily_return_lo"] <= row["daily_return_sum"] <= row["daily_return_hi"]
    effects = swap_effects(load_run(out)).iloc[0]
    r = cells.set_index(["analyst_set", "agent"])["total_return"]
    analyst = (
        abs(r["model", "ew"] - r["rules", "ew"]) + abs(r["model", "score"] - r["rules", "score"])
    ) / 2
    constructor = (
        abs(r["model", "ew"] - r["model", "score"]) + abs(r["rules", "ew"] - r["rules", "score"])
    ) / 2
    assert effects["analyst_effect"] == pytest.approx(analyst)
    assert effects["constructor_effect"] == pytest.approx(constructor)
    result = CliRunner().invoke(app, ["report", str(out)])
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text()
    assert "Mandate: analyst swap" in page and "same-pool EW" in page
    assert "analyst_effect" in page


def test_model_analyst_reads_only_the_view_and_violations_count(swap_run, mandate_dataset) -> None:
    out, requests, future = swap_run
    ds = load_dataset(mandate_dataset)
    calls = [r for r in requests if r.forced_tool() == TOOL_NAME]
    # one call choosing the pool (every candidate) + one per decision day, shared by both
    # constructors through the captures
    assert len(calls) == 4
    sizes = sorted(
        len(
            r.tool_schemas()[TOOL_NAME]["properties"]["signals"]["items"]["properties"]["symbol"][
                "enum"
            ]
        )
        for r in calls
    )
    assert sizes[:3] == [5, 5, 5] and sizes[3] > 400
    for r in calls:
        text = _user(r)
        instant = pd.Timestamp(re.search(r"Decision instant (\S+) ", text)[1])
        for rid, _ in LINE.findall(text):
            assert MarketView(ds, ds.panel.dates[-1]).record(rid).ts_available <= instant
    for agent in ("ew", "score"):
        folder = out / "episodes" / f"{agent}_daily_k5_model_s0_{WINDOW}"
        record = json.loads((folder / "episode.json").read_text())
        liked = len(set(record["pool"]) & set(LIKED))  # each cites the future id, each day
        assert record["headline"]["citation_violations"] == 3 * liked > 0
        assert record["analyst_tokens"] > 0
        cert = EpisodeCertificate.model_validate_json((folder / "certificate.json").read_text())
        assert cert.model_cutoffs == {"analyst": "2023-06-01"}
        assert cert.verdict == "FAIL"  # the future record was shown before it existed
        assert {(r.rule, r.record_id) for r in cert.reasons} >= {("gate", future)}
        rules = out / "episodes" / f"{agent}_daily_k5_rules_s0_{WINDOW}"
        assert (
            json.loads((rules / "episode.json").read_text())["headline"]["citation_violations"] == 0
        )
    captures = {
        json.loads(
            (out / "episodes" / f"{a}_daily_k5_model_s0_{WINDOW}" / "episode.json").read_text()
        )["captures"]
        for a in ("ew", "score")
    }
    assert len(captures) == 1  # the same bytes replayed under both constructors


CONSTRAINTS = {"long_only": True, "max_weight": 0.3, "cash_floor": 0.05}


def test_the_mandate_compiled_by_a_model(mandate_dataset: Path, tmp_path: Path) -> None:
    script = [
        Reply.tool(COMPILE_TOOL, {"max_weight": 3}),  # out of range: fed back, retried
        Reply.tool(COMPILE_TOOL, CONSTRAINTS),
    ]
    with LoopbackServer(script=script) as server:
        spec = example_spec(
            mandate_dataset,
            pool_sizes=[5],
            max_steps=2,
            mandate="Long only, at most 30% per name, keep 5% cash.",
            mandate_compiler="llm",
            mandate_compiler_agent="compiler",
        )
        spec["agents"] = [
            {"name": "ew", "baseline": "equal_weight"},
            {"name": "compiler", "provider": "openai", "model": "c", "base_url": server.openai_url},
        ]
        spec["modes"] = ["daily"]
        run(spec, tmp_path / "run")
        compile_calls = [r for r in server.requests if r.forced_tool() == COMPILE_TOOL]
    assert len(compile_calls) == 2  # once per run (plus the retry), not per episode
    stored = json.loads((tmp_path / "run/mandate.json").read_text())
    assert stored["compiler"] == "llm" and stored["model"] == "openai:c"
    expected = compile_mandate(
        "Long only. No more than 30% in any single name. Keep at least 5% in cash."
    )
    assert stored["constraints"] == expected.model_dump(mode="json")
    episode = json.loads(
        (tmp_path / f"run/episodes/ew_daily_k5_s0_{WINDOW}/episode.json").read_text()
    )
    assert episode["mandate"]["compiler"] == "llm"
    assert episode["mandate"]["constraints_hash"] == stored["constraints_hash"]
    result = CliRunner().invoke(app, ["report", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "run/report.html").read_text()
    assert "No more than 30% in any single name." in page and stored["constraints_hash"] in page


def test_a_compiler_that_is_not_a_model_agent_is_refused(mandate_dataset, tmp_path) -> None:
    spec = example_spec(
        mandate_dataset, pool_sizes=[5], mandate_compiler="llm", mandate_compiler_agent="ew"
    )
    with pytest.raises(ConfigError, match="not model agents"):
        run(spec, tmp_path / "run")


def test_a_compiler_with_no_valid_call_is_one_error_line(mandate_dataset, tmp_path) -> None:
    bad = Reply.tool(COMPILE_TOOL, {"max_weight": 3})
    with LoopbackServer(script=[bad] * 3) as server:
        spec = example_spec(
            mandate_dataset,
            pool_sizes=[5],
            max_steps=1,
            mandate_compiler="llm",
            mandate_compiler_agent="compiler",
        )
        spec["agents"] = [
            {"name": "ew", "baseline": "equal_weight"},
            {"name": "compiler", "provider": "openai", "model": "c", "base_url": server.openai_url},
        ]
        path = tmp_path / "spec.yaml"
        path.write_text(json.dumps(spec, default=str))
        result = CliRunner().invoke(app, ["run", str(path), "-o", str(tmp_path / "run")])
    assert result.exit_code != 0 and "Traceback" not in result.output
    lines = [x for x in result.output.splitlines() if x.strip()]
    assert lines[-1].startswith("error: the mandate compiler failed") and "3 attempt" in lines[-1]
    assert not (tmp_path / "run/mandate.json").exists()
