"""The six analyst roles: the three evidence views added to technical, news and filings
(`fundamental`, `sentiment`, `risk`), each as a rule analyst and as a model analyst.

Oracles are computed here with pandas from the files themselves: the bars from the shared
source parquet, the records from the imported dataset's `records.parquet`, never through
`MarketView` or the analysts' code."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.benchmarks.mandate.conftest import example_spec, run
from tradebench.benchmarks.mandate.analysts import NEGATIVE, POSITIVE
from tradebench.benchmarks.mandate.model_analysts import TOOL_NAME
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply, default_responder

NEW_ROLES = ("fundamental", "sentiment", "risk")
EVIDENCE_NAMES = ("COIN", "NFLX", "MSFT", "AMZN", "TSLA")
"""The names with records; the scripted analyst scores them +0.9."""
FUTURE_ID_DAY = "2025-07-15"
LINE = re.compile(r"^  \[([^\]]+)\] (\d{4}-\d{2}-\d{2} \d{2}:\d{2}) UTC", re.MULTILINE)
PCT = r"(-?\d+\.\d\d)%"
RISK_LINE = re.compile(
    rf"^(\S+): 60-day max drawdown {PCT}, downside volatility {PCT}, beta to the index "
    r"(-?\d+\.\d\d)$",
    re.MULTILINE,
)
RANGE_LINE = re.compile(
    rf"^(\S+): last close at {PCT} of its 252-day range \({PCT} from the high, {PCT} above "
    r"the low\)$",
    re.MULTILINE,
)
COUNT_LINE = re.compile(r"^(\S+): (\d+) headlines in 30 days, (\d+) in the last 7$", re.MULTILINE)
WORD = re.compile(r"[A-Za-z]+")
PERIODIC = re.compile(r"\b10-[KQ]\b")


# ------------------------------------------------------------------ oracles (pandas only)
@pytest.fixture(scope="module")
def closes(shared_data: Path) -> pd.DataFrame:
    """Adjusted closes (date x symbol) of the source file from the dataset's start."""
    bars = pd.read_parquet(shared_data / "us" / "sp500_daily_adj_2005_2025.parquet")
    bars = bars[bars["date"] >= "2024-09-01"]
    bars["symbol"] = bars["symbol"].astype(str)
    return bars.pivot(index="date", columns="symbol", values="close").sort_index()


@pytest.fixture(scope="module")
def records(mandate_dataset: Path) -> pd.DataFrame:
    """The imported records as the dataset file holds them."""
    frame = pd.read_parquet(mandate_dataset / "records.parquet")
    return frame.sort_values(["ts_available", "record_id"]).reset_index(drop=True)


def before(closes: pd.DataFrame, day: pd.Timestamp, rows: int) -> pd.DataFrame:
    """The last `rows` dates strictly before `day`."""
    return closes[closes.index < day.tz_localize(None).normalize()].iloc[-rows:]


def risk_oracle(closes: pd.DataFrame, day: pd.Timestamp, names: list[str]) -> pd.DataFrame:
    """Max drawdown, downside volatility and beta over 60 returns before `day`."""
    px = before(closes, day, 61)
    rets = px / px.shift(1) - 1
    rets = rets.iloc[1:]
    market = rets["SPY"]
    rows = {}
    for name in names:
        r = rets[name].dropna()
        p = px[name].dropna()
        both = rets[[name]].assign(m=market).dropna()
        cov = ((both[name] - both[name].mean()) * (both["m"] - both["m"].mean())).mean()
        rows[name] = {
            "max_drawdown": (p / p.cummax() - 1).min(),
            "downside_vol": math.sqrt((r.clip(upper=0) ** 2).mean()),
            "beta": cov / both["m"].var(ddof=0),
            "coverage": rets[name].notna().mean(),
        }
    return pd.DataFrame(rows).T


def range_oracle(closes: pd.DataFrame, day: pd.Timestamp, names: list[str]) -> pd.DataFrame:
    """Position of the last close in the range of the last 252 closes before `day`."""
    px = before(closes, day, 252)
    rows = {}
    for name in names:
        c = px[name].dropna()
        last, low, high = c.iloc[-1], c.min(), c.max()
        rows[name] = {
            "position": (last - low) / (high - low),
            "off_high": last / high - 1,
            "above_low": last / low - 1,
            "coverage": min(1.0, len(c) / 252),
        }
    return pd.DataFrame(rows).T


def naming(records: pd.DataFrame, name: str, kind: str, start, end) -> pd.DataFrame:
    """Records of `kind` naming `name` with `start < ts_available <= end`."""
    mask = (
        (records["kind"] == kind)
        & records["symbols"].map(lambda s: name in list(s))
        & (records["ts_available"] <= end)
    )
    if start is not None:
        mask &= records["ts_available"] > start
    return records[mask]


def latest_report(records: pd.DataFrame, name: str, instant: pd.Timestamp) -> pd.Series | None:
    """The newest 10-K/10-Q of `name` accepted by `instant`."""
    mine = naming(records, name, "filing", None, instant)
    mine = mine[mine["title"].map(lambda t: bool(PERIODIC.search(t)))]
    return None if mine.empty else mine.iloc[-1]


def tone(title: str) -> int:
    """+1/-1/0 by the headline's lexicon counts."""
    words = [w.lower() for w in WORD.findall(title)]
    pos = sum(w in POSITIVE for w in words)
    neg = sum(w in NEGATIVE for w in words)
    return int(np.sign(pos - neg))


# ------------------------------------------------------------- rule versions of the roles
@pytest.fixture(scope="module")
def rule_run(mandate_dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All six rule analysts on the five evidence names (the random control pool puts
    names with records first), one daily decision."""
    spec = example_spec(
        mandate_dataset,
        pool_sizes=[5],
        max_steps=1,
        pool="random",
        analysts=["technical", "news", "filings", *NEW_ROLES],
    )
    spec["agents"] = [{"name": "ew", "baseline": "equal_weight"}]
    spec["modes"] = ["daily"]
    out = tmp_path_factory.mktemp("six") / "run"
    run(spec, out)
    return out


def _capture(out: Path, episode: str, day: str) -> dict:
    record = json.loads((out / "episodes" / episode / "episode.json").read_text())
    return json.loads((out / record["captures"] / f"{day}.json").read_text())


def test_rule_roles_give_the_documented_numbers(rule_run: Path, closes, records) -> None:
    capture = _capture(rule_run, "ew_daily_k5_s0_20250602-20250804", "2025-06-02")
    assert capture["analysts"] == ["technical", "news", "filings", *NEW_ROLES]
    pool = capture["pool"]
    assert sorted(pool) == sorted(EVIDENCE_NAMES)
    instant = pd.Timestamp(capture["decision_time"])
    sig = {(s["analyst"], s["symbol"]): s for s in capture["signals"]}

    # risk: z-scores across the pool of the three measures; less risk ranks higher
    rk = risk_oracle(closes, instant, pool)
    z = {c: (rk[c] - rk[c].mean()) / rk[c].std(ddof=0) for c in ("downside_vol", "beta")}
    depth = -rk["max_drawdown"]
    z["depth"] = (depth - depth.mean()) / depth.std(ddof=0)
    for name in pool:
        s = sig["risk", name]
        want = math.tanh(-(z["downside_vol"][name] + z["depth"][name] + z["beta"][name]) / 3)
        assert s["score"] == pytest.approx(want, abs=2e-6)
        assert s["confidence"] == pytest.approx(rk.loc[name, "coverage"], abs=1e-6)
        for key in ("max_drawdown", "downside_vol", "beta"):
            assert s["features"][key] == pytest.approx(rk.loc[name, key], abs=2e-6)
        assert s["cited"] == []

    # fundamental: 1 - 2 x range position; coverage / 2 + 1/2 for a report within 120 days
    rg = range_oracle(closes, instant, pool)
    for name in pool:
        s = sig["fundamental", name]
        report = latest_report(records, name, instant)
        assert report is not None  # each evidence name has a 10-K/10-Q before June 2025
        days = (instant - report["ts_available"]).total_seconds() / 86400
        fresh = 0.5 if days <= 120 else 0.0
        assert s["score"] == pytest.approx(1 - 2 * rg.loc[name, "position"], abs=2e-6)
        assert s["confidence"] == pytest.approx(rg.loc[name, "coverage"] / 2 + fresh, abs=2e-6)
        assert s["cited"] == [report["record_id"]]
        assert s["features"]["period_end"] == f"{report['ts_event']:%Y-%m-%d}"
        assert s["features"]["form"] == PERIODIC.search(report["title"]).group(0)

    # sentiment: (up - down) / (n + 1) over 30 days of headlines, confidence n / 30
    for name in pool:
        s = sig["sentiment", name]
        news = naming(records, name, "news", instant - pd.Timedelta(days=30), instant)
        tones = [tone(t) for t in news["title"]]
        n = len(tones)
        assert s["score"] == pytest.approx((tones.count(1) - tones.count(-1)) / (n + 1), abs=2e-6)
        assert s["confidence"] == pytest.approx(min(1.0, n / 30), abs=1e-9)
        assert s["cited"] == news["record_id"].iloc[-10:].tolist()
        recent = (news["ts_available"] > instant - pd.Timedelta(days=7)).sum()
        assert s["features"]["n_recent"] == recent
    assert sig["sentiment", "COIN"]["confidence"] == 1.0  # COIN is in the news every day
    assert sig["sentiment", "COIN"]["score"] != 0.0
    assert capture["violations"] == []


# ----------------------------------------------------------- model versions of the roles
def _user(request: RecordedRequest) -> str:
    return next(m["content"] for m in request.body["messages"] if m["role"] == "user")


def _system(request: RecordedRequest) -> str:
    return next(m["content"] for m in request.body["messages"] if m["role"] == "system")


def _ids_by_name(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("  [") and current:
            out[current].append(line[3 : line.index("]")])
        elif ":" in line and not line.startswith((" ", "Decision")):
            current = line.split(":")[0]
            out.setdefault(current, [])
    return out


def scripted_analyst(future_id: str):
    """Score the evidence names +0.9, citing the ids shown for them and one id not yet
    visible (a citation violation per signal)."""

    def respond(request: RecordedRequest) -> Reply:
        if request.forced_tool() != TOOL_NAME:
            return default_responder(request)
        item = request.tool_schemas()[TOOL_NAME]["properties"]["signals"]["items"]
        allowed = set(item["properties"]["symbol"]["enum"])
        shown = _ids_by_name(_user(request))
        signals = [
            {"symbol": n, "score": 0.9, "confidence": 1.0, "cited": [*shown[n][:2], future_id]}
            for n in EVIDENCE_NAMES
            if n in allowed
        ]
        return Reply.tool(TOOL_NAME, {"signals": signals})

    return respond


@pytest.fixture(scope="module")
def model_run(mandate_dataset: Path, records, tmp_path_factory: pytest.TempPathFactory):
    """A scripted model playing the three new roles (one analyst set) beside the six rule
    analysts (another), K = 5, two daily decisions."""
    future = naming(
        records, "COIN", "news", None, pd.Timestamp(f"{FUTURE_ID_DAY} 13:30", tz="UTC")
    ).iloc[-1]["record_id"]
    out = tmp_path_factory.mktemp("six_model") / "run"
    with LoopbackServer(responder=scripted_analyst(future)) as server:
        spec = example_spec(
            mandate_dataset,
            pool_sizes=[5],
            max_steps=2,
            analyst_sets={
                "rules": ["technical", "news", "filings", *NEW_ROLES],
                "model": [{"role": r, "agent": "analyst"} for r in NEW_ROLES],
            },
        )
        spec["agents"] = [
            {"name": "ew", "baseline": "equal_weight"},
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
        requests = [r for r in server.requests if r.forced_tool() == TOOL_NAME]
    return out, requests, future


def test_model_roles_see_nothing_after_the_decision_instant(model_run, closes, records) -> None:
    _, requests, _ = model_run
    by_role: dict[str, int] = {}
    stamps = records.set_index("record_id")["ts_available"]
    for request in requests:
        role = re.search(r"You are the (\w+) analyst", _system(request))[1]
        by_role[role] = by_role.get(role, 0) + 1
        text = _user(request)
        instant = pd.Timestamp(re.search(r"Decision instant (\S+) ", text)[1])
        shown = LINE.findall(text)
        for rid, printed in shown:  # every record shown was available at the instant
            assert stamps[rid] <= instant, (role, rid)
            assert printed == f"{stamps[rid]:%Y-%m-%d %H:%M}"
        if role == "sentiment":
            assert shown, "the sentiment analyst reads headlines"
            counts = {m[0]: (int(m[1]), int(m[2])) for m in COUNT_LINE.findall(text)}
            for name in ("COIN", "NFLX"):
                news = naming(records, name, "news", instant - pd.Timedelta(days=30), instant)
                recent = (news["ts_available"] > instant - pd.Timedelta(days=7)).sum()
                assert counts[name] == (len(news), recent)
            assert all(stamps[rid] > instant - pd.Timedelta(days=30) for rid, _ in shown)
        if role == "fundamental":
            ids = _ids_by_name(text)
            for name in EVIDENCE_NAMES:
                if name in ids:
                    report = latest_report(records, name, instant)
                    assert ids[name] == [report["record_id"]]
            found = {m[0]: [float(x) / 100 for x in m[1:]] for m in RANGE_LINE.findall(text)}
            assert len(found) >= 5
            oracle = range_oracle(closes, instant, sorted(found))
            for name, (position, off_high, above_low) in found.items():
                assert position == pytest.approx(oracle.loc[name, "position"], abs=6e-5)
                assert off_high == pytest.approx(oracle.loc[name, "off_high"], abs=6e-5)
                assert above_low == pytest.approx(oracle.loc[name, "above_low"], abs=6e-5)
        if role == "risk":
            assert not shown  # its evidence is bars only
            found = {m[0]: [float(x) for x in m[1:]] for m in RISK_LINE.findall(text)}
            assert len(found) >= 5
            oracle = risk_oracle(closes, instant, sorted(found))
            for name, (drawdown, downside, beta) in found.items():
                assert drawdown / 100 == pytest.approx(oracle.loc[name, "max_drawdown"], abs=6e-5)
                assert downside / 100 == pytest.approx(oracle.loc[name, "downside_vol"], abs=6e-5)
                assert beta == pytest.approx(oracle.loc[name, "beta"], abs=6e-3)
    # per role: one call over every candidate (the pool choice) and one per decision day
    assert by_role == {"fundamental": 3, "sentiment": 3, "risk": 3}


def test_model_roles_invisible_citations_are_counted(model_run) -> None:
    out, _, future = model_run
    episodes = out / "episodes"
    model = json.loads(
        (episodes / "ew_daily_k5_model_s0_20250602-20250804/episode.json").read_text()
    )
    rules = json.loads(
        (episodes / "ew_daily_k5_rules_s0_20250602-20250804/episode.json").read_text()
    )
    liked = len(set(model["pool"]) & set(EVIDENCE_NAMES))
    assert liked == 5  # the model set's aggregation puts the evidence names on top
    # each of the three roles cites the future id for each liked name on each of two days
    assert model["headline"]["citation_violations"] == 2 * 3 * liked
    assert rules["headline"]["citation_violations"] == 0
    capture = json.loads((out / model["captures"] / "2025-06-03.json").read_text())
    assert {v["record_id"] for v in capture["violations"]} == {future}
    assert {v["analyst"] for v in capture["violations"]} == {f"{r}:analyst" for r in NEW_ROLES}
