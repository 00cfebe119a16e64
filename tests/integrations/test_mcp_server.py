"""`tradebench serve mcp`: the official MCP SDK client plays a portfolio episode.

The client plays the decisions the scripted loopback trader makes natively (research the
market context and a screen, buy the first id it saw with a 5% weight), so the served
episode must end with the native run's days: the same NAV, cash, orders and positions, in
the same files and summary columns. Under the blinded mask no tool result, observation,
instruction or tool description the client receives holds a real code or trading date.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from tests.benchmarks.portfolio.conftest import ID_RE, spec_dict, trader
from tests.leak_scan import find_leaks
from tradebench.data import load_dataset
from tradebench.llm.loopback import LoopbackServer
from tradebench.runs.spec import RunSpec

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")
from mcp import Client, StdioServerParameters  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EPISODE = "scripted_open_research_blinded_s0_20240301-20240307"
TOKEN_COLUMNS = ["tokens_in", "tokens_out", "cost_usd"]
"""What the served run cannot match: the client's tokens never pass through tradebench."""
MARKER = "QQ_ZZ_MARKER_777"


def _spec(dataset: Path, url: str) -> dict[str, Any]:
    """One blinded open-research model episode over five days, the index and a baseline."""
    return spec_dict(dataset, url, ["blinded"], ["open_research"])


@pytest.fixture(scope="module")
def native(cn_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the spec file, the native run folder) of the scripted trader's run."""
    from tradebench.benchmarks import run_spec

    root = tmp_path_factory.mktemp("mcp")
    with LoopbackServer(responder=trader) as server:
        spec = _spec(cn_dataset_dir, server.openai_url)
        asyncio.run(run_spec(RunSpec.model_validate(spec), root / "native"))
    spec_file = root / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    return spec_file, root / "native"


@dataclass
class Player:
    """Plays the scripted trader's decisions through an MCP client; keeps every text."""

    client: Any
    received: list[str] = field(default_factory=list)
    day: list[tuple[str, str]] = field(default_factory=list)
    """The day's messages as (role, text), as the native trader would read them."""
    results: list[Any] = field(default_factory=list)
    submitted: list[Any] = field(default_factory=list)
    """The results of `submit_action` calls."""

    def _keep(self, result: Any) -> Any:
        self.results.append(result)
        roles = result.structured_content["roles"]
        for role, block in zip(roles, result.content, strict=True):
            self.received.append(block.text)
            if role != "server":
                self.day.append((role, block.text))
        return result

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call a tool and keep what came back."""
        return self._keep(await self.client.call_tool(name, arguments))

    async def observe(self) -> Any:
        """Re-read the day (after connecting)."""
        self.day = []
        return await self.call("get_observation", {})

    def first_id(self) -> str | None:
        """The trader's choice: the first id of a table in a text turn or of a tool
        result's rows, in conversation order (`tests.benchmarks.portfolio.conftest`)."""
        for role, text in self.day:
            if role == "tool":
                try:
                    data = json.loads(text)
                except json.JSONDecodeError:
                    continue
                rows = data.get("rows") if isinstance(data, dict) else None
                if rows:
                    return str(rows[0]["stock_id"])
            elif match := ID_RE.search(text):
                return match.group(1)
        return None

    def decision(self) -> dict[str, Any]:
        """The trader's submission for the day."""
        ident = self.first_id()
        if ident is None:
            return {"orders": [], "overall_reason": "nothing researched, hold"}
        order = {
            "stock_id": ident,
            "side": "BUY",
            "target_weight": 0.05,
            "confidence": 0.6,
            "reason": "first name on the screen",
        }
        return {
            "orders": [order],
            "overall_reason": "buy the top screened name with a small weight",
        }

    async def research(self) -> None:
        """The trader's two research calls."""
        await self.call("get_market_context", {})
        await self.call("screen_candidates", {"feature": "ret_20d", "top_k": 5})

    async def submit(self, arguments: dict[str, Any]) -> Any:
        """Submit; on an accepted one the day starts over with the next observation."""
        result = await self.call("submit_action", arguments)
        self.submitted.append(result)
        if result.structured_content["new_day"]:
            system = [m for m in self.day if m[0] == "system"][:1]
            self.day = system + _new_day(result)
        return result

    async def play(self, days: int | None = None) -> None:
        """Research and submit each day until the episode ends (or `days` are played)."""
        played = 0
        while days is None or played < days:
            await self.research()
            result = await self.submit(self.decision())
            played += 1
            if result.structured_content["finished"]:
                return


def _new_day(result: Any) -> list[tuple[str, str]]:
    """The next day's messages in an accepted submission's result (after its own result)."""
    roles = result.structured_content["roles"]
    pairs = list(zip(roles, (b.text for b in result.content), strict=True))
    return [(role, text) for role, text in pairs if role != "tool"]


def _texts_of_listing(tools: Any, instructions: str | None) -> str:
    parts = [instructions or ""]
    for tool in tools.tools:
        parts += [tool.name, tool.description or "", json.dumps(tool.input_schema)]
    return "\n".join(parts)


def _steps(run: Path) -> pd.DataFrame:
    return pd.read_parquet(run / "episodes" / EPISODE / "steps.parquet")


def _same_days(served: Path, native: Path, skip: list[str]) -> None:
    """The served episode's days, orders and positions equal the native run's."""
    a, b = _steps(served), _steps(native)
    assert list(a.columns) == list(b.columns)
    pd.testing.assert_frame_equal(a.drop(columns=skip), b.drop(columns=skip))
    for name in ("orders.parquet", "positions.parquet"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(served / "episodes" / EPISODE / name),
            pd.read_parquet(native / "episodes" / EPISODE / name),
        )


def _env() -> dict[str, str]:
    """This interpreter's environment with this checkout's sources first on the path."""
    paths = [str(REPO / "src"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def _stdio_server(spec: Path, out: Path, *extra: str) -> StdioServerParameters:
    env = _env()
    command = ["-m", "tradebench.cli", "serve", "mcp", str(spec), "-o", str(out), *extra]
    return StdioServerParameters(command=sys.executable, args=command, env=env, cwd=str(REPO))


def test_stdio_client_plays_the_episode_like_a_native_run(
    native: tuple[Path, Path], cn_dataset_dir: Path, tmp_path: Path
) -> None:
    spec, native_run = native
    served = tmp_path / "served"

    async def session() -> tuple[Player, str]:
        async with Client(_stdio_server(spec, served), read_timeout_seconds=300) as client:
            listing = _texts_of_listing(await client.list_tools(), client.instructions)
            listing += "\n" + client.server_info.model_dump_json()
            player = Player(client)
            await player.observe()
            await player.play()
            return player, listing

    player, listing = asyncio.run(session())
    ds = load_dataset(cn_dataset_dir)
    # nothing the client read names a real stock or a real trading day
    text = "\n".join([listing, *player.received])
    assert find_leaks(text, [str(s) for s in ds.panel.symbols], ds.panel.dates) == []
    assert "get_stock_snapshot" in listing and "submit_action" in listing
    # the same five days as the native run: same decisions, fills, NAV, positions
    steps = _steps(served)
    assert len(steps) == 5 and steps["n_orders"].sum() > 0
    _same_days(served, native_run, TOKEN_COLUMNS)
    assert (steps["tokens_in"].fillna(0) == 0).all()
    # the summary has the native columns and the same scores for every episode
    a = pd.read_parquet(served / "summary.parquet").set_index("episode_id").sort_index()
    b = pd.read_parquet(native_run / "summary.parquet").set_index("episode_id").sort_index()
    assert list(a.columns) == list(b.columns)
    common = a.index.intersection(b.index)
    assert EPISODE in common and "benchmark_20240301-20240307" in common
    scores = ["total_return", "sharpe", "max_drawdown", "n_steps", "status", "hhi", "cash_ratio"]
    pd.testing.assert_frame_equal(a.loc[common, scores], b.loc[common, scores])
    record = json.loads((served / "episodes" / EPISODE / "episode.json").read_text())
    assert record["served"] == "mcp" and record["status"] == "done"
    # each accepted submission's result opens with the loop's own acceptance
    assert len(player.submitted) == 5
    for result in player.submitted:
        assert json.loads(result.content[0].text) == {"ok": True, "message": "submission accepted"}
    # the last call says the episode is over, with the run's own return
    last = player.results[-1]
    assert last.structured_content["finished"] and not last.is_error
    assert f"{a.loc[EPISODE, 'total_return']:+.2%}" in last.content[-1].text
    # and the report shows it like any run
    done = subprocess.run(
        [sys.executable, "-m", "tradebench.cli", "report", str(served)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert EPISODE in (served / "report.html").read_text(encoding="utf-8")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_http(spec: Path, out: Path, port: int) -> subprocess.Popen[bytes]:
    """`serve mcp --http PORT`, returned once it accepts connections."""
    env = _env()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tradebench.cli",
            "serve",
            "mcp",
            str(spec),
            "-o",
            str(out),
            "--http",
            str(port),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    while True:  # bounded by the server itself: it listens, or it exits
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode()[-2000:] if proc.stderr else "")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.1)


def test_http_client_gets_structural_feedback_and_resumes_after_a_kill(
    native: tuple[Path, Path], tmp_path: Path
) -> None:
    spec, native_run = native
    served = tmp_path / "served"
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    malformed = {
        "orders": [{"stock_id": MARKER, "side": "HOLD", "confidence": 0.5, "reason": "x" * 12}],
    }

    async def first_two_days() -> tuple[Any, Any]:
        async with Client(url, read_timeout_seconds=300) as client:
            player = Player(client)
            first = await player.observe()
            await player.research()
            refused = await player.call("submit_action", malformed)
            await player.submit(player.decision())
            await player.play(days=1)
            return first, refused

    async def the_rest() -> Any:
        async with Client(url, read_timeout_seconds=300) as client:
            player = Player(client)
            resumed = await player.observe()
            await player.play()
            return resumed, player.results[-1]

    proc = _start_http(spec, served, port)
    try:
        first, refused = asyncio.run(first_two_days())
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert first.structured_content["step"] == 1 and first.structured_content["total"] == 5
    # the malformed submission: refused with the loop's structural feedback, no echo
    assert refused.is_error
    error = json.loads(refused.content[0].text)["error"]
    assert error["type"] == "rejected" and error["attempts_left"] == 3
    paths = {issue["path"] for issue in error["issues"]}
    assert any("overall_reason" in p or p == "(root)" for p in paths), error
    assert any("side" in p for p in paths), error
    assert MARKER not in refused.content[0].text and "HOLD" not in refused.content[0].text
    assert refused.structured_content["phase"] == "submit"
    progress = served / "episodes" / EPISODE / "progress.jsonl"
    assert len(progress.read_text().splitlines()) == 2  # two days journaled before the kill
    assert not (served / "summary.parquet").exists()

    proc = _start_http(spec, served, port)
    try:
        resumed, last = asyncio.run(the_rest())
    finally:
        proc.terminate()
        proc.wait()
    assert resumed.structured_content["step"] == 3
    assert last.structured_content["finished"]
    # the refusal counts as a native retry on day 1; every other column is the native run's
    steps = _steps(served)
    assert steps["retries"].tolist() == [1, 0, 0, 0, 0]
    _same_days(served, native_run, [*TOKEN_COLUMNS, "retries"])
    assert (served / "summary.parquet").exists()


def test_json_answer_form_takes_the_submit_arguments_as_the_days_answer(
    native: tuple[Path, Path], cn_dataset_dir: Path, tmp_path: Path
) -> None:
    """Prompt version v4 in fixed-candidate mode answers with one JSON object and offers no
    tools: the client's `submit_action` arguments are that answer, checked by the same
    validation; another tool is refused without counting as an attempt."""
    spec, _ = native
    raw = yaml.safe_load(spec.read_text())
    raw["modes"] = ["fixed_candidate"]
    raw["options"] = {**raw["options"], "prompt_version": "v4"}
    spec_v4 = tmp_path / "spec_v4.yaml"
    spec_v4.write_text(yaml.safe_dump(raw))
    served = tmp_path / "served"
    hold = {"orders": [], "overall_reason": "holding cash for the day"}

    async def session() -> tuple[Player, Any, Any, Any, str]:
        async with Client(_stdio_server(spec_v4, served), read_timeout_seconds=300) as client:
            player = Player(client)
            await player.observe()
            refused = await player.call("get_market_context", {})
            malformed = await player.call("submit_action", {"orders": []})
            buy = player.decision()
            bought = await player.submit(buy)
            while not (await player.submit(hold)).structured_content["finished"]:
                pass
            return player, refused, malformed, bought, buy["orders"][0]["stock_id"]

    player, refused, malformed, bought, sent = asyncio.run(session())
    assert refused.is_error and refused.structured_content["roles"] == ["server"]
    assert malformed.is_error and malformed.structured_content["roles"] == ["user"]
    feedback = json.loads(malformed.content[0].text)["error"]
    assert feedback["type"] == "rejected" and feedback["attempts_left"] == 3
    assert bought.structured_content["new_day"] and not bought.is_error
    episode = "scripted_fixed_candidate_blinded_s0_20240301-20240307"
    folder = served / "episodes" / episode
    steps = pd.read_parquet(folder / "steps.parquet")
    assert steps["retries"].tolist() == [1, 0, 0, 0, 0]  # the refused tool did not count
    assert steps["parse_failures"].sum() == 0 and steps["n_orders"].tolist() == [1, 0, 0, 0, 0]
    orders = pd.read_parquet(folder / "orders.parquet")
    ds = load_dataset(cn_dataset_dir)
    assert orders["symbol"].iloc[0] in {str(s) for s in ds.panel.symbols}  # unmasked to trade
    assert orders["stock_id_sent"].iloc[0] == sent and sent.startswith("asset_")
    text = "\n".join(player.received)
    assert find_leaks(text, [str(s) for s in ds.panel.symbols], ds.panel.dates) == []
