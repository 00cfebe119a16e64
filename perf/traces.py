"""Size of an episode's masked trace: the JSONL journal against the zstd file kept when done.

One portfolio model episode (default: open_research, blinded) over the real CSI300
point-in-time universe, 2024-01-02 .. 2026-04-10 (548 trading days), against a
zero-latency scripted model on the loopback server (it researches with two tools, then
buys the first screened name at 5%). Both sides come from the same run: the JSONL bytes are
exactly what the journal wrote (and what run folders kept before compaction), recovered
from the `.zst` and checked against an independent decompressor when `zstandard` is
installed. Also printed: the time compaction takes and the rest of the episode folder.

Also printed: the reply cache the episode wrote (compact rows) beside the same rows as
plain text, the format before.

Target: under 3 MB of trace and cache per 548-step episode, lossless.
Run: python perf/traces.py [--mode open_research] [--mask blinded] [--end 2026-04-10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import import_real_cn

from tradebench.benchmarks import run_spec
from tradebench.llm.cache import ResponseCache
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.runs.records import TRACE_FILE, TRACE_ZST_FILE
from tradebench.runs.spec import RunSpec
from tradebench.runs.trace import compact_trace, trace_bytes

START, END = "2024-01-02", "2026-04-10"


def _first_screened(req: RecordedRequest) -> str | None:
    """The first stock id of a screen result in the conversation."""
    for msg in (req.body or {}).get("messages") or []:
        if msg.get("role") != "tool":
            continue
        try:
            rows = json.loads(msg.get("content") or "").get("rows")
        except (json.JSONDecodeError, AttributeError):
            continue
        if rows:
            return str(rows[0]["stock_id"])
    return None


def scripted(req: RecordedRequest) -> Reply:
    """Market context, a screen, then buy the first screened name (or hold)."""
    if req.forced_tool() == "submit_action":
        ident = _first_screened(req)
        orders = (
            []
            if ident is None
            else [
                {
                    "stock_id": ident,
                    "side": "BUY",
                    "target_weight": 0.05,
                    "confidence": 0.6,
                    "reason": "first on the screen",
                }
            ]
        )
        return Reply.tool("submit_action", {"orders": orders, "overall_reason": "top screened"})
    done = sum(1 for m in (req.body or {}).get("messages") or [] if m.get("role") == "tool")
    if "screen_candidates" in req.tool_schemas() and done == 0:
        return Reply.tool("get_market_context", {})
    if "screen_candidates" in req.tool_schemas() and done == 1:
        return Reply.tool("screen_candidates", {"feature": "ret_20d", "top_k": 5})
    return Reply.say("research done")


def _spec(dataset: Path, url: str, mode: str, mask: str, end: str) -> dict[str, Any]:
    return {
        "dataset": str(dataset),
        "windows": [{"start": START, "end": end}],
        "modes": [mode],
        "masks": [mask],
        "agents": [
            {"name": "scripted", "provider": "openai", "model": "m", "base_url": url},
        ],
        "options": {"max_tool_calls": 3},
    }


def _independent(path: Path) -> bytes | None:
    try:
        import zstandard
    except ImportError:
        return None
    with path.open("rb") as fh:
        return zstandard.ZstdDecompressor().stream_reader(fh).read()


def main() -> None:
    """Run the episode, then print the trace's size both ways and the round-trip check."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="open_research")
    parser.add_argument("--mask", default="blinded")
    parser.add_argument("--end", default=END)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = import_real_cn(Path(tmp) / "csi300", start="2023-06-01", end="2026-05-08")
        run = Path(tmp) / "run"
        started = time.perf_counter()
        with LoopbackServer(responder=scripted) as server:
            spec = _spec(data, server.openai_url, args.mode, args.mask, args.end)
            asyncio.run(run_spec(RunSpec.model_validate(spec), run))
        elapsed = time.perf_counter() - started
        folder = next((run / "episodes").glob("scripted_*"))
        packed = folder / TRACE_ZST_FILE
        jsonl = trace_bytes(folder) or b""
        check = _independent(packed)
        steps = jsonl.count(b"\n")
        # the compaction itself, timed on the same bytes written back as the journal
        (folder / TRACE_FILE).write_bytes(jsonl)
        packed.unlink()
        t0 = time.perf_counter()
        compact_trace(folder)
        compact_s = time.perf_counter() - t0
        rest = sum(p.stat().st_size for p in folder.iterdir() if p.name != TRACE_ZST_FILE)
        mb = 1024 * 1024
        print(f"episode {folder.name}: {steps} steps, run {elapsed:.1f} s")
        print(f"  trace.jsonl (journal, the old kept file)  {len(jsonl) / mb:7.2f} MB")
        print(
            f"  trace.jsonl.zst (kept now)                {packed.stat().st_size / mb:7.2f} MB"
            f"  ({len(jsonl) / packed.stat().st_size:.1f}x smaller; compaction {compact_s:.2f} s)"
        )
        verdict = "not run (zstandard not installed)" if check is None else str(check == jsonl)
        print(f"  independent decompression equals the JSONL: {verdict}")
        print(f"  rest of the episode folder                {rest / mb:7.2f} MB")
        cache = sum(p.stat().st_size for p in run.glob("cache.sqlite*"))
        rows = list(ResponseCache(run / "cache.sqlite", mode="replay").rows())
        replies = len(rows)
        as_text = sum(len(r.key) + len(r.request) + len(r.response) for r in rows)
        print(
            f"  cache.sqlite (with its WAL)               {cache / mb:7.2f} MB"
            f"  ({replies} replies, {cache / max(replies, 1) / 1024:.1f} KB each)"
        )
        print(f"  the same rows as plain text (old format)  {as_text / mb:7.2f} MB")
        whole = cache + packed.stat().st_size
        print(f"  cache + kept trace                        {whole / mb:7.2f} MB  (target < 3 MB)")


if __name__ == "__main__":
    main()
