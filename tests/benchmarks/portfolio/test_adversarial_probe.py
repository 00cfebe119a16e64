"""The masks hold at every seam: an adversarial model against the whole benchmark.

A scripted model (`adversary.Adversary`) talks to the real tool loop through the loopback
server, in every mode x mask, under raw and rebased prices, on the real CSI300 data and on
the synthetic market. It writes real tickers and real dates in every form into every tool
argument and every submission field, sends ids and day labels out of range, malformed
JSON and an unreadable body, then trades so that the next step shows holdings and fills.
Everything the model receives (system, user and tool messages, tool schemas) is then read
by the test's own scanner (`tests.leak_scan`, which shares no pattern with the masker):

- no real ticker, date or company name where the mask hides them;
- feedback reads the same whether a field held an attack string or a neutral one of the
  same length (an oracle shows as a difference: quoted, or masked into an alias);
- under rebased prices no raw price level of a traded stock, and no ratio of account
  numbers (NAV x weight / units; the cash spent / units filled) that gives one.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.benchmarks.portfolio.adversary import Adversary, is_neutral
from tests.benchmarks.portfolio.conftest import spec_dict
from tests.leak_scan import date_forms, find_leaks, find_names, find_price_levels
from tradebench.benchmarks import run_spec
from tradebench.data import Dataset, load_dataset
from tradebench.llm.loopback import LoopbackServer
from tradebench.masking import MASK_LEVELS
from tradebench.runs.spec import RunSpec

MODES = ["memory_only", "fixed_candidate", "open_research"]
WINDOWS = {"cn": ("2024-03-01", "2024-03-04"), "synth": ("2024-02-01", "2024-02-02")}
FAMOUS = ("Moutai", "Kweichow", "贵州茅台", "Ping An", "中国平安", "CATL", "宁德时代", "BYD")
"""Company names an A-share reader knows, besides any the dataset carries."""
INITIAL_CASH = 1_000_000.0
PRICED_BAND = (3.0, 40.0)
"""Raw closes of the stocks whose levels are scanned for: far from the rebased 100."""


@dataclass(frozen=True)
class Conversation:
    """One episode step as the model last saw it (the loop only appends)."""

    mode: str
    stocks_hidden: bool
    dates_hidden: bool
    body: dict[str, Any]

    def received(self) -> str:
        """Every byte the model received: all but its own turns, and the tool schemas."""
        parts = [m for m in self.body["messages"] if m["role"] != "assistant"]
        return json.dumps([parts, self.body.get("tools")], ensure_ascii=False)

    @property
    def user(self) -> str:
        """The step's user message."""
        return self.body["messages"][1]["content"]

    @property
    def mask(self) -> str:
        """The mask level the conversation shows."""
        return {
            (False, False): "bright",
            (True, False): "stock_blind",
            (False, True): "date_blind",
            (True, True): "blinded",
        }[(self.stocks_hidden, self.dates_hidden)]


@dataclass(frozen=True)
class AdversarialRun:
    """One run (every mode x mask) of the adversary under one price mode."""

    name: str
    price_mode: str
    ds: Dataset
    conversations: list[Conversation]
    folder: Path
    capital: float
    """The run's initial capital, as its spec.yaml recorded it."""


def _conversations(requests: list[Any]) -> list[Conversation]:
    """The longest request of each conversation (keyed by its system and user message)."""
    longest: dict[str, dict[str, Any]] = {}
    for req in requests:
        body = req.body or {}
        key = json.dumps(body["messages"][:2])
        if len(body["messages"]) >= len(longest.get(key, {"messages": []})["messages"]):
            longest[key] = body
    out = []
    for body in longest.values():
        user = body["messages"][1]["content"]
        mode = next(m for m in MODES if _mode_marker(m) in json.dumps(body))
        out.append(
            Conversation(
                mode=mode,
                stocks_hidden=bool(re.search(r"(?:Identifiers|Preview): asset_", user)),
                dates_hidden="Decision day day_" in user,
                body=body,
            )
        )
    return out


def _mode_marker(mode: str) -> str:
    return {
        "memory_only": "Identifiers: ",
        "fixed_candidate": "Candidate pool: ",
        "open_research": "get_stock_snapshot",
    }[mode]


@pytest.fixture(
    scope="module",
    params=[("cn", "raw"), ("cn", "rebased"), ("synth", "raw"), ("synth", "rebased")],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AdversarialRun:
    """The adversary in every mode x mask, two decision days, one price mode."""
    name, price_mode = request.param
    path = request.getfixturevalue("cn_dataset_dir" if name == "cn" else "synth_dataset_dir")
    ds = load_dataset(path)
    start, end = WINDOWS[name]
    day = pd.Timestamp(start).date()
    before = pd.Timestamp(ds.panel.dates[np.searchsorted(ds.panel.dates, np.datetime64(start)) - 1])
    real = "SH600519" if "SH600519" in ds.panel.column_map else str(ds.panel.symbols[0])
    iso, compact, _, _, _, short, _, _, chinese = date_forms(day)
    attacks = (
        *(iso, compact, short, chinese),
        str(before.date()),
        "day_+999",
        "asset_99999",
        f"{real[2:]}.{real[:2]}",
        real[2:],
        real,
    )
    folder = tmp_path_factory.mktemp(f"adv-{name}-{price_mode}")
    with LoopbackServer(responder=Adversary(attacks)) as server:
        spec = spec_dict(path, server.openai_url, list(MASK_LEVELS), MODES, end=end)
        spec["windows"] = [{"start": start, "end": end}]
        spec["agents"] = spec["agents"][:1]
        spec["agents"][0]["max_tokens"] = 1024
        spec["options"] = {
            "max_tool_calls": 400,
            "max_submit_retries": 400,
            "price_mode": price_mode,
        }
        summary = pd.read_parquet(asyncio.run(run_spec(RunSpec.model_validate(spec), folder)))
        requests = list(server.requests)
    llm = summary[summary["kind"] == "llm"]
    assert (llm["status"] == "done").all() and len(llm) == 12
    assert (llm["fallback_steps"] == 0).all()  # after every attack, a valid decision
    capital = float(RunSpec.load(folder / "spec.yaml").options["initial_cash"])
    visible = llm["lot_visible_share"]
    if price_mode == "rebased":  # the default capital hides every lot (docs/portfolio.md)
        assert capital > 200_000 * 2 * before_close_max(ds, start) and (visible == 0).all()
    else:
        assert capital == INITIAL_CASH and visible.isna().all()
    return AdversarialRun(name, price_mode, ds, _conversations(requests), folder, capital)


def before_close_max(ds: Dataset, start: str) -> float:
    """The dearest raw close among the day's members on the day before `start`."""
    pos = int(np.searchsorted(ds.panel.dates, np.datetime64(start)))
    listed = ds.panel.listed[pos] & ds.panel.listed[pos - 1]
    return float(np.nanmax(np.where(listed, ds.panel.fields["close"][pos - 1], np.nan)))


def test_every_mode_and_mask_was_attacked(run: AdversarialRun) -> None:
    seen = {(c.mode, c.stocks_hidden, c.dates_hidden) for c in run.conversations}
    assert len(seen) == 12 and len(run.conversations) == 24  # 2 steps of each episode
    research = [c for c in run.conversations if c.mode == "open_research" and "Step 1 of" in c.user]
    assert len(research) == 4
    for c in research:  # the research attacks reached the tools (20 calls per string)
        assert sum(m["role"] == "tool" for m in c.body["messages"]) > 180


def test_no_real_ticker_date_or_company_reaches_the_model(run: AdversarialRun) -> None:
    symbols = [str(s) for s in run.ds.panel.symbols]
    inst = run.ds.instruments
    names = [*FAMOUS, *(inst["name"].dropna().astype(str) if "name" in inst else [])]
    for c in run.conversations:
        text = c.received()
        leaks = find_leaks(text, symbols, run.ds.panel.dates, c.stocks_hidden, c.dates_hidden)
        assert leaks == [], (c.mode, c.stocks_hidden, c.dates_hidden, leaks[:5])
        if c.stocks_hidden:
            assert find_names(text, names) == [], c.mode
    bright = [c for c in run.conversations if not (c.stocks_hidden or c.dates_hidden)]
    assert find_leaks(bright[0].received(), symbols, run.ds.panel.dates)  # the scan can fail


def _pairs(body: dict[str, Any]) -> list[tuple[str, dict[str, Any], str, str]]:
    """(attack string, attack call, its result, the neutral twin's result) of every attack
    reply."""
    messages = body["messages"]
    results = {m.get("tool_call_id"): m["content"] for m in messages if m["role"] == "tool"}
    out = []
    for m in messages:
        calls = m.get("tool_calls") or []
        for a, b in zip(calls[::2], calls[1::2], strict=False):
            sent = [a["function"]["name"], json.loads(a["function"]["arguments"] or "{}")]
            twin = [b["function"]["name"], json.loads(b["function"]["arguments"] or "{}")]
            if is_neutral(twin):
                x = _differing(sent, twin)
                out.append((x, a["function"], results.get(a["id"], ""), results.get(b["id"], "")))
    return out


def _differing(a: Any, b: Any) -> str:
    """The string of `a` that its twin `b` replaced (a value, a key or a name)."""
    if isinstance(a, dict):
        for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True):
            if ka != kb:
                return str(ka)
            if va != vb:
                return _differing(va, vb)
    if isinstance(a, list):
        for va, vb in zip(a, b, strict=True):
            if va != vb:
                return _differing(va, vb)
    return str(a)


def _feedback(content: str) -> Any:
    """A tool result without the attempts count (it falls by one from call to call)."""
    data = json.loads(content)
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        data["error"].pop("attempts_left", None)
    return data


def test_feedback_reads_the_same_whatever_a_field_held(run: AdversarialRun) -> None:
    symbols = {str(s) for s in run.ds.panel.symbols}
    checked = 0
    for c in run.conversations:
        for x, call, sent, twin in _pairs(c.body):
            if not c.stocks_hidden and x in symbols:
                continue  # a real ticker is a valid id where tickers are shown
            assert _feedback(sent) == _feedback(twin), (c.mode, c.mask, x, call, sent, twin)
            checked += 1
    assert checked > 700


def _price_levels(ds: Dataset, symbol: str, end: str) -> np.ndarray:
    """Raw open/high/low/close and limit prices of `symbol` over its last 40 visible days."""
    stop = int(np.searchsorted(ds.panel.dates, np.datetime64(end), side="right"))
    col = ds.panel.column_map[symbol]
    fields = [ds.panel.fields[f][max(stop - 40, 0) : stop, col] for f in ("open", "high", "low")]
    close = ds.panel.fields["close"][max(stop - 40, 0) : stop, col]
    limits = [np.round(close * (1 + s * p), 2) for p in (0.05, 0.1, 0.2, 0.3) for s in (1, -1)]
    return np.concatenate([*fields, close, *limits])


def _orders(run: AdversarialRun) -> pd.DataFrame:
    frames = []
    for folder in (run.folder / "episodes").iterdir():
        orders = pd.read_parquet(folder / "orders.parquet")
        frames.append(orders.assign(episode=folder.name))
    return pd.concat(frames, ignore_index=True)


def test_no_raw_price_level_under_rebased_prices(run: AdversarialRun) -> None:
    """Raw levels of every traded stock priced far from 100: none shown under rebased
    prices; under raw prices the same scan finds them (it can fail)."""
    filled = _orders(run).query("status != 'rejected'")
    end = WINDOWS[run.name][1]
    traded = sorted(set(filled["symbol"]))
    col = run.ds.panel.column_map
    stop = int(np.searchsorted(run.ds.panel.dates, np.datetime64(end), side="right"))
    closes = {s: run.ds.panel.fields["close"][stop - 40 : stop, col[s]] for s in traded}
    lo, hi = PRICED_BAND
    judged = [s for s in traded if np.all((closes[s] > lo) & (closes[s] < hi))]
    assert judged, traded
    levels = np.concatenate([_price_levels(run.ds, s, end) for s in judged])
    found = [
        (c.mode, find_price_levels(c.received(), levels)[:5])
        for c in run.conversations
        if c.mode != "memory_only"
    ]
    if run.price_mode == "rebased":
        assert all(not hits for _, hits in found), _context(found, run.conversations)
    else:
        assert any(hits for _, hits in found)


def _context(found: list[tuple[str, list[float]]], conversations: list[Conversation]) -> str:
    """Where each level found stands in the text (for the failure message)."""
    out = []
    shown = [c for c in conversations if c.mode != "memory_only"]
    for (mode, hits), c in zip(found, shown, strict=True):
        text = c.received()
        for value in hits[:2]:
            at = text.find(f"{value}")
            out.append(f"{mode}: ...{text[max(at - 80, 0) : at + 20]}...")
    return "\n".join(out[:10])


ACCOUNT_RE = re.compile(r"cash CNY ([\d,.]+) \([\d.]+% of NAV\); NAV CNY ([\d,.]+)")
HOLDING_RE = re.compile(
    r"^- (\S+): ([\d,.]+) shares \(sellable [\d,.n/a]+\), weight ([\d.]+)%", re.M
)
FILL_RE = re.compile(r"^- BUY (\S+): (?:filled|partial) ([\d,.]+) shares, cost ([\d,.]+)", re.M)


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def _implied(c: Conversation, capital: float) -> list[tuple[str, str, float]]:
    """(id, channel, implied price) from the account text of a second step: NAV x weight /
    units of each holding, and the cash spent on the one fill over the units filled."""
    account = ACCOUNT_RE.search(c.user)
    assert account, c.user[:400]
    cash, nav = _num(account.group(1)), _num(account.group(2))
    out = [
        (ident, "nav x weight / units", nav * _num(w) / 100 / _num(units))
        for ident, units, w in HOLDING_RE.findall(c.user)
    ]
    fills = FILL_RE.findall(c.user)
    if len(fills) == 1:
        ident, units, cost = fills[0]
        spent = capital - cash - _num(cost)
        out.append((ident, "cash spent / units", spent / _num(units)))
    for state in _tool_results(c.body, "get_portfolio_state"):
        for p in state.get("positions", []):
            value = state["nav"] * p["weight"]
            out.append((p["stock_id"], "state nav x weight / shares", value / p["shares"]))
    return out


def _tool_results(body: dict[str, Any], name: str) -> list[dict[str, Any]]:
    ids = {
        call["id"]
        for m in body["messages"]
        for call in m.get("tool_calls") or []
        if call["function"]["name"] == name
    }
    return [
        json.loads(m["content"])
        for m in body["messages"]
        if m["role"] == "tool" and m.get("tool_call_id") in ids
    ]


def test_no_ratio_of_account_numbers_gives_a_raw_price(run: AdversarialRun) -> None:
    """The named attacks on the account (state, memory-only text, fill feedback) recover
    the raw price under raw prices and never under rebased ones."""
    orders = _orders(run)
    panel = run.ds.panel
    day = int(np.searchsorted(panel.dates, np.datetime64(WINDOWS[run.name][0])))
    judged = 0
    for c in (c for c in run.conversations if "Step 2 of" in c.user):
        mine = orders[orders["episode"].str.contains(f"_{c.mode}_{c.mask}_")]
        real_of = dict(zip(mine["stock_id_sent"], mine["symbol"], strict=False))
        for ident, channel, implied in _implied(c, run.capital):
            col = panel.column_map[real_of[ident]]
            raw = panel.fields["open" if channel.startswith("cash") else "close"][day, col]
            base = panel.fields["close"][day - 1, col]
            rebased = 100 * raw / base
            if run.price_mode == "raw":
                assert implied == pytest.approx(raw, rel=0.01), (c.mode, channel)
            elif abs(rebased / raw - 1) > 0.2:  # a rebased level that is not the raw one
                assert abs(implied / raw - 1) > 0.05, (c.mode, channel, implied, raw)
                assert implied == pytest.approx(rebased, rel=0.01), (c.mode, channel)
            judged += 1
    assert judged >= 12


def test_limit_prices_carry_no_raw_price_tick(run: AdversarialRun) -> None:
    """Under rebased prices a limit price is the shown close moved by the limit, to display
    rounding; the exchange's limit price (a raw price rounded to its 0.01 tick) would tell
    the raw level by how far the rounding moved it. Under raw prices it is that price."""
    rel = {"raw": [], "rebased": []}
    for c in run.conversations:
        for snap in _tool_results(c.body, "get_stock_snapshot"):
            if "bars" not in snap or snap.get("next_limit_up") is None:
                continue
            close, pct = snap["bars"][-1]["close"], snap["limit_pct"]
            for shown, sign in ((snap["next_limit_up"], 1), (snap["next_limit_down"], -1)):
                rel[run.price_mode].append(abs(shown / (close * (1 + sign * pct)) - 1))
    moved = np.asarray(rel[run.price_mode])
    assert moved.size >= 8
    if run.price_mode == "rebased":
        assert moved.max() < 2e-5, moved.max()  # 3 decimals on a level near 100
    else:
        assert moved.max() > 1e-4  # the tick shows: the check can fail
