"""Build a small but real run folder: engine baselines plus hand-written LLM episodes.

Baselines (`equal_weight` x 2 seeds, `momentum_topk`, `cash`) and the benchmark index
run through the real engine on the synthetic market. The LLM episodes are written by
hand with known final NAVs, so their metrics are hand-computable, and orders that carry
`stock_id_sent`, confidences, reasons (one of them a script tag) and reject codes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from tradebench.runs.broker.backtest import BacktestRequest, backtest_to_folder, score
from tradebench.runs.broker.engine import BacktestResult
from tradebench.runs.broker.rows import ORDER_COLUMNS, STEP_COLUMNS
from tradebench.runs.broker.store import write_run
from tradebench.runs.records import AgentRef, RunRecord

START, END = "2021-03-01", "2021-04-30"
SPAN = "20210301-20210430"
INITIAL_CASH = 1_000_000.0
LLM_AGENT = "llm-a"
SCRIPT_REASON = "<script>alert(1)</script> buy the dip & hold"
BASELINES = (("equal_weight", 0), ("equal_weight", 1), ("momentum_topk", 0), ("cash", 0))
LLM_EPISODES = (
    # (mode, mask, seed, final NAV): total returns 0.10, 0.20, -0.05, 0.03
    ("memory_only", "bright", 0, 1_100_000.0),
    ("memory_only", "bright", 1, 1_200_000.0),
    ("memory_only", "blinded", 0, 950_000.0),
    ("open_research", "stock_blind", 0, 1_030_000.0),
)
LLM_ORDERS = (
    # (side, confidence, reason, status, reject_code)
    ("BUY", 0.8, "strong momentum over 20 days", "filled", None),
    ("SELL", 0.6, "take profit", "rejected", "T1_LOCKED"),
    ("BUY", 0.55, "cheap versus sector peers", "rejected", "LOT_SIZE"),
    ("BUY", 0.7, "add to winner", "partial", "INSUFFICIENT_CASH"),
)


def episode_id(agent: str, seed: int, mode: str = "", mask: str = "") -> str:
    """Episode id in the runner's style."""
    parts = [agent, mode, mask, f"s{seed}", SPAN]
    return "_".join(p for p in parts if p)


def _meta(agent: str, kind: str, mode: str, mask: str, seed: int, status: str) -> dict:
    return {
        "agent": agent,
        "kind": kind,
        "mode": mode,
        "mask": mask,
        "seed": seed,
        "window": {"start": START, "end": END},
        "status": status,
    }


def _write_meta(folder: Path, meta: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "episode.json").write_text(json.dumps(meta, indent=2))


def _baselines(dataset: Path, episodes: Path) -> None:
    bench = episodes / f"benchmark_{SPAN}"
    backtest_to_folder(BacktestRequest(dataset, "benchmark", START, END, bench))
    _write_meta(bench, _meta("benchmark", "benchmark", "n/a", "n/a", 0, "done"))
    for agent, seed in BASELINES:
        folder = episodes / episode_id(agent, seed)
        args = {} if agent == "cash" else {"every": 5}
        backtest_to_folder(BacktestRequest(dataset, agent, START, END, folder, agent_args=args))
        _write_meta(folder, _meta(agent, "baseline", "n/a", "n/a", seed, "done"))


def _llm_orders(dates: pd.Series, mask: str, seed: int, symbols: list[str]) -> pd.DataFrame:
    rows = []
    for k, (side, conf, reason, status, code) in enumerate(LLM_ORDERS):
        symbol = symbols[(k + seed) % len(symbols)]
        sent = symbol if mask == "bright" else f"asset_{k + 10 * seed + 1:03d}"
        if mask == "blinded" and k == 0:
            reason = SCRIPT_REASON
        filled = 0 if status == "rejected" else 100
        row = dict.fromkeys(ORDER_COLUMNS)
        row |= {
            "date": dates.iloc[k],
            "symbol": symbol,
            "side": side,
            "requested_shares": 200,
            "filled_shares": filled,
            "fill_price": 10.0 if filled else None,
            "cost": 5.0 if filled else 0.0,
            "status": status,
            "reject_code": code,
            "message": "",
            "confidence": conf,
            "reason": reason,
            "stock_id_sent": sent,
            "outcome": 1.0 if filled else np.nan,
        }
        rows.append(row)
    return pd.DataFrame(rows, columns=ORDER_COLUMNS)


def _llm_steps(bench_steps: pd.DataFrame, final_nav: float, n: int | None = None) -> pd.DataFrame:
    steps = bench_steps.iloc[:n].copy() if n else bench_steps.copy()
    nav = np.linspace(INITIAL_CASH, final_nav, len(bench_steps) + 1)[1 : len(steps) + 1]
    steps = steps.assign(nav=nav, cash=0.1 * nav, n_orders=1, n_rejected=0, turnover=0.05)
    llm = {"parse_failures": 0, "tool_calls": 3, "tool_calls_valid": 2, "retries": 0}
    llm |= {"tokens_in": 1000, "tokens_out": 200}
    if "cost_usd" in STEP_COLUMNS:
        llm["cost_usd"] = 0.01
    return steps.assign(**llm)[STEP_COLUMNS]


def _llm_episodes(episodes: Path, symbols: list[str]) -> None:
    bench = episodes / f"benchmark_{SPAN}"
    bench_steps = pd.read_parquet(bench / "steps.parquet")
    bench_start = json.loads((bench / "metrics.json").read_text())["benchmark"]
    base = bench_steps["benchmark_close"].iloc[-1] / (1 + bench_start["total_return"])
    for mode, mask, seed, final in LLM_EPISODES:
        steps = _llm_steps(bench_steps, final)
        result = BacktestResult(
            steps=steps,
            positions=pd.DataFrame(columns=["date", "symbol", "weight"]),
            orders=_llm_orders(steps["date"], mask, seed, symbols),
            initial_cash=INITIAL_CASH,
            benchmark_start=float(base),
        )
        folder = episodes / episode_id(LLM_AGENT, seed, mode, mask)
        record = RunRecord(
            agent=AgentRef(name=LLM_AGENT), start=START, end=END, initial_cash=INITIAL_CASH
        )
        write_run(folder, result, score(result), record)
        _write_meta(folder, _meta(LLM_AGENT, "llm", mode, mask, seed, "done"))
    running = episodes / episode_id(LLM_AGENT, 2, "memory_only", "bright")
    _write_meta(running, _meta(LLM_AGENT, "llm", "memory_only", "bright", 2, "running"))
    _llm_steps(bench_steps, 1_500_000.0, n=5).to_parquet(running / "steps.parquet")
    failed = episodes / episode_id(LLM_AGENT, 3, "memory_only", "bright")
    _write_meta(failed, _meta(LLM_AGENT, "llm", "memory_only", "bright", 3, "failed"))


def build_run_folder(dataset: Path, run_dir: Path) -> Path:
    """Write spec.yaml and every episode under `run_dir` (no summary.parquet)."""
    episodes = run_dir / "episodes"
    _baselines(dataset, episodes)
    orders = pd.read_parquet(episodes / episode_id("equal_weight", 0) / "orders.parquet")
    _llm_episodes(episodes, sorted(orders["symbol"].unique())[:8])
    spec = {
        "name": "report <test> run",
        "dataset": str(dataset),
        "windows": [{"start": START, "end": END}],
        "modes": ["memory_only", "open_research"],
        "masks": ["bright", "stock_blind", "blinded"],
        "seeds": [0, 1],
        "agents": [{"name": LLM_AGENT, "provider": "openai", "model": "m"}],
    }
    (run_dir / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return run_dir
