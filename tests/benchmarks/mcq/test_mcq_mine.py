"""`tradebench mcq mine` end to end: scripted generator and solver on a real loopback server,
verification code in the real sandbox, the database checked line by line.

Six rounds cover every path: accepted (only the tools solver gets it), too easy (the
no-tools solver gets it), failing code, malformed blocks, a duplicate, and the review queue.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from tradebench.benchmarks.mcq.config import DataRef
from tradebench.benchmarks.mcq.prompt_files import load_prompt
from tradebench.cli.mcq import app
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply

runner = CliRunner()
ACCEPT = "Q-ACCEPT: What is the mean close of the first 10 bars in bars.csv, to 2 decimals?"
ACCEPT_CODE = """import csv
with open("bars.csv") as fh:
    closes = [float(row["close"]) for row in csv.DictReader(fh)][:10]
print("mean of", len(closes))
print(f"{sum(closes) / len(closes):.2f}")
"""
EASY_CODE = 'import os\nprint(int(os.environ["MCQ_SEED"]) * 2 + 40)\n'
REVIEW_CODE = "import os\nprint(f\"{int(os.environ['MCQ_SEED']) * 1.5:.1f}\")\n"


def reply(question: str, code: str | None, rationale: str = "Needs the data.") -> str:
    code_block = f"<<<CODE>>>\n```python\n{code}```\n" if code is not None else ""
    return f"<<<QUESTION>>>\n{question}\n{code_block}<<<RATIONALE>>>\n{rationale}\n"


GENERATED = [
    reply(ACCEPT, ACCEPT_CODE),
    reply("Q-EASY: With MCQ_SEED = 1, what is 2 x seed + 40?", EASY_CODE),
    reply("Q-FAIL: What does this print?", "print(1 / 0)\n"),
    reply("Q-MALFORMED: no code here", None),
    reply("  " + ACCEPT.replace("mean close", "mean   close").upper() + "\n", ACCEPT_CODE),
    reply("Q-REVIEW: With MCQ_SEED = 5, what is 1.5 x seed?", REVIEW_CODE),
]


def _options(request: RecordedRequest) -> dict[str, str]:
    user = next(m for m in request.body["messages"] if m["role"] == "user")["content"]
    return dict(re.findall(r"^([A-D])\) (.*)$", user, flags=re.MULTILINE))


def _letter(options: dict[str, str], value: str, right: bool) -> str:
    return next(k for k, v in options.items() if (v == value) == right)


def make_responder(script: list[str], keys: dict[str, str]) -> Callable[[RecordedRequest], Reply]:
    """Generator: the script in order. Solver: wrong without tools except Q-EASY; with
    tools, one run_python call and then right for Q-ACCEPT, wrong for Q-REVIEW."""
    queue = list(script)

    def respond(request: RecordedRequest) -> Reply:
        body = request.body
        if body["model"] == "gen":
            return Reply.say(queue.pop(0))
        user = next(m for m in body["messages"] if m["role"] == "user")["content"]
        tag = next(t for t in keys if t in user)
        options = _options(request)
        if "tools" not in body:
            return Reply.say(f"Answer: {_letter(options, keys[tag], tag == 'Q-EASY')}")
        if not any(m["role"] == "tool" for m in body["messages"]):
            return Reply.tool("run_python", {"code": "print(open('bars.csv').readline())"})
        return Reply.tool("answer", {"letter": _letter(options, keys[tag], tag == "Q-ACCEPT")})

    return respond


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _mine(db: Path, url: str, ref: DataRef, rounds: int) -> str:
    args = ["mine", "--generator", "openai:gen", "--solver", "openai:solver", "--base-url", url]
    args += ["--rounds", str(rounds), "--concurrency", "1", "--code-timeout", "20"]
    args += ["--bars", ref.path, "--symbol", "AAPL", "--start", "2020-01-01"]
    args += ["--end", "2024-01-01", "-o", str(db)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def keys(aapl: tuple[DataRef, pd.DataFrame]) -> dict[str, str]:
    _, bars = aapl
    return {"Q-ACCEPT": f"{bars['close'].head(10).mean():.2f}", "Q-EASY": "42", "Q-REVIEW": "7.5"}


def test_mining_end_to_end(aapl, keys, tmp_path):
    ref, _ = aapl
    db = tmp_path / "db"
    with LoopbackServer(responder=make_responder(GENERATED, keys)) as server:
        output = _mine(db, server.openai_url, ref, rounds=6)
    assert "accepted 1/6" in output
    stage1 = [r for r in server.requests if r.body["model"] == "solver" and "tools" not in r.body]
    assert stage1 and all(  # stage 1 asks for a single letter, as evaluation does
        r.body["messages"][0]["content"] == load_prompt("solver_no_tools") for r in stage1
    )

    attempts = _jsonl(db / "db" / "attempts" / "attempts.jsonl")
    assert [a["outcome"] for a in attempts] == [
        "accepted",
        "too_easy",
        "failed_code",
        "malformed",
        "duplicate",
        "review",
    ]
    assert [a["seed"] for a in attempts] == [0, 1, 2, 3, 4, 5]
    assert [a["round"] for a in attempts] == [1, 2, 3, 4, 5, 6]
    assert "ZeroDivisionError" in attempts[2]["reason"]
    assert attempts[3]["reason"] == "missing <<<CODE>>> block"
    assert attempts[4]["question_sha256"] == attempts[0]["question_sha256"]
    assert attempts[1]["stage1_letter"] == attempts[1]["answer"]
    assert set(attempts[1]["tokens"]) == {"generator", "solver_no_tools"}  # stage 2 skipped
    assert set(attempts[0]["tokens"]) == {"generator", "solver_no_tools", "solver_with_tools"}

    (accepted,) = _jsonl(db / "db" / "mcq" / "accepted.jsonl")
    assert accepted["status"] == "accepted" and accepted["stem"] == ACCEPT
    assert accepted["answer_value"] == keys["Q-ACCEPT"]
    assert accepted["options"][accepted["answer"]] == keys["Q-ACCEPT"]
    assert accepted["distractor_source"] == "jitter"  # the code ignores the seed
    assert accepted["question"].startswith("Data: daily bars of AAPL")
    assert accepted["data"]["bars_sha256"] == ref.bars_sha256
    assert accepted["code"] == ACCEPT_CODE and accepted["rationale"] == "Needs the data."
    (review,) = _jsonl(db / "db" / "mcq" / "review.jsonl")
    assert review["status"] == "review" and review["distractor_source"] == "seeds"
    assert review["answer_value"] == "7.5"
    assert sorted(review["options"].values()) == sorted(["7.5", "1521.0", "3034.5", "4548.0"])

    (summary,) = _jsonl(db / "db" / "summary" / "summary.jsonl")
    assert summary["run"] == 1 and summary["attempts"] == 6
    assert summary["outcomes"] == {
        "accepted": 1,
        "review": 1,
        "too_easy": 1,
        "failed_code": 1,
        "malformed": 1,
        "ill_posed": 0,
        "duplicate": 1,
    }
    assert summary["acceptance_rate"] == pytest.approx(1 / 6)
    for role in ("generator", "solver_no_tools", "solver_with_tools"):
        assert summary["tokens"][role]["input_tokens"] > 0
    gen_in = sum(a["tokens"]["generator"]["input_tokens"] for a in attempts)
    assert summary["tokens"]["generator"]["input_tokens"] == gen_in

    (run_dir,) = (db / "runs").iterdir()
    assert re.fullmatch(r"\d{8}T\d{6}Z-run001", run_dir.name)
    logs = sorted(p.name for p in run_dir.iterdir())
    assert logs == [f"r00{i}-00.json" for i in range(1, 7)]
    first = json.loads((run_dir / "r001-00.json").read_text())
    assert first["code_runs"][0]["stdout"].splitlines()[-1] == keys["Q-ACCEPT"]
    assert len(first["code_runs"]) == 9  # the answer run and eight reseeded runs

    requests = server.requests
    generator_prompts = [
        r.body["messages"][1]["content"] for r in requests if r.body["model"] == "gen"
    ]
    assert "(none yet)" in generator_prompts[0] and "MCQ_SEED=0" in generator_prompts[0]
    assert '[accepted] "Q-ACCEPT' in generator_prompts[1]
    assert "[malformed]" in generator_prompts[4] and "[duplicate]" in generator_prompts[5]
    stage1 = [r for r in requests if r.body["model"] == "solver" and "tools" not in r.body]
    assert len(stage1) == 3  # accept, easy, review: all verified questions, without tools


def test_mining_is_deterministic_and_dedups_across_runs(aapl, keys, tmp_path):
    ref, _ = aapl
    script = GENERATED[:2]
    dbs = [tmp_path / "a", tmp_path / "b"]
    for db in dbs:
        with LoopbackServer(responder=make_responder(script, keys)) as server:
            _mine(db, server.openai_url, ref, rounds=2)
    for part in ("attempts/attempts.jsonl", "mcq/accepted.jsonl", "summary/summary.jsonl"):
        assert (dbs[0] / "db" / part).read_bytes() == (dbs[1] / "db" / part).read_bytes()

    with LoopbackServer(responder=make_responder([GENERATED[0]], keys)) as server:
        _mine(dbs[0], server.openai_url, ref, rounds=1)  # the same question again
    attempts = _jsonl(dbs[0] / "db" / "attempts" / "attempts.jsonl")
    assert [(a["run"], a["outcome"], a["seed"]) for a in attempts] == [
        (1, "accepted", 0),
        (1, "too_easy", 1),
        (2, "duplicate", 2),
    ]
    prompt = server.requests[0].body["messages"][1]["content"]
    assert '[too_easy] "Q-EASY' in prompt  # earlier runs' history reaches the generator
    summaries = _jsonl(dbs[0] / "db" / "summary" / "summary.jsonl")
    assert [s["run"] for s in summaries] == [1, 2]


SAME_TEXT_CODE = ACCEPT_CODE.replace("[:10]", "[:11]")  # same words, another program


def test_dedup_is_over_the_whole_question_and_roles_and_domains_are_recorded(aapl, tmp_path):
    """The same text with another answer is a new question; the same text, options and
    answer is a duplicate. Stage 2 runs on its own model; every attempt carries its domain."""
    ref, bars = aapl
    script = [
        reply(ACCEPT, ACCEPT_CODE) + "<<<DOMAIN>>>\nMarket  Data\n",
        reply(ACCEPT, SAME_TEXT_CODE) + "<<<DOMAIN>>>\nastrology\n",
        reply(ACCEPT.lower(), ACCEPT_CODE),
    ]
    means = {f"{bars['close'].head(n).mean():.2f}" for n in (10, 11)}
    queue = list(script)

    def respond(request: RecordedRequest) -> Reply:
        """Generator: the script. Stage 1: a wrong letter. Stage 2: one call, then right."""
        if request.body["model"] == "gen":
            return Reply.say(queue.pop(0))
        options = _options(request)
        right = next(k for k, v in options.items() if v in means)
        if "tools" not in request.body:
            return Reply.say(f"Answer: {next(k for k in options if k != right)}")
        if not any(m["role"] == "tool" for m in request.body["messages"]):
            return Reply.tool("run_python", {"code": "print(1)"})
        return Reply.tool("answer", {"letter": right})

    db = tmp_path / "db"
    with LoopbackServer(responder=respond) as server:
        args = ["mine", "--generator", "openai:gen", "--solver", "openai:solver"]
        args += ["--solver-with-tools", "openai:tooler", "--base-url", server.openai_url]
        args += ["--rounds", "3", "--concurrency", "1", "--code-timeout", "20"]
        args += ["--bars", ref.path, "--symbol", "AAPL", "--start", "2020-01-01"]
        result = runner.invoke(app, [*args, "--end", "2024-01-01", "-o", str(db)])
        assert result.exit_code == 0, result.output
    attempts = _jsonl(db / "db" / "attempts" / "attempts.jsonl")
    assert [a["outcome"] for a in attempts] == ["accepted", "accepted", "duplicate"]
    assert attempts[1]["answer_value"] == f"{bars['close'].head(11).mean():.2f}"
    # the second has the same text and another answer: a new question; the third repeats
    # text, options and answer: a duplicate
    assert attempts[2]["content_sha256"] == attempts[0]["content_sha256"]
    assert attempts[0]["question_sha256"] == attempts[1]["question_sha256"]
    assert [a["domain"] for a in attempts] == ["market data", "other", "unlabelled"]
    models = {r.body["model"]: "tools" in r.body for r in server.requests}
    assert models == {"gen": False, "solver": False, "tooler": True}
    accepted = _jsonl(db / "db" / "mcq" / "accepted.jsonl")[0]
    assert accepted["domain"] == "market data" and accepted["id"] == attempts[0]["content_sha256"]
    assert (accepted["solver"], accepted["solver_with_tools"]) == ("openai:solver", "openai:tooler")
