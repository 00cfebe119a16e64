"""Every field of a spec's agent entry reaches the model's request and the cache key, or is
in the documented list of fields that do not (`runs.spec.NOT_SENT_TO_MODEL`).

The fields are enumerated from the models (`AgentEntry`, and its `model` block, a
`ModelConfig`), so a new field fails `test_every_agent_field_is_probed_or_documented` until
it is given a probe here or a reason there. Each probe sets one field away from its default
on its own agent; one real step of every agent runs against the loopback server, each agent
at its own URL path, all sharing one reply cache. The oracle is written here: the value is
read back from the request body the server received and from the canonical request stored
beside the key (SQLite, read directly). The documented fields are checked too: changing one
leaves the key of the base agent's request as it was (the cache holds exactly one row per
probe plus the base's). Run-level fields that shape the request (`seeds`, `options.prompt_version`)
get a second run on the same cache.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tradebench.benchmarks import run_spec
from tradebench.llm.cache import ResponseCache
from tradebench.llm.loopback import LoopbackServer, RecordedRequest
from tradebench.llm.types import ModelConfig
from tradebench.runs.guard import AGENT_TRANSPORT_KEYS
from tradebench.runs.spec import NOT_SENT_TO_MODEL, AgentEntry, RunSpec

ROOT = Path(__file__).resolve().parents[2]
Check = Callable[[dict[str, Any]], bool]


@dataclass(frozen=True)
class Probe:
    """A field set away from its default, and where its value must show (in every request
    of its agent: the text protocol's agent retries, the loopback calls no tool in text)."""

    value: dict[str, Any]
    """Agent-entry keys to set (the field, plus what it needs)."""
    in_body: Check
    """True when the request body the server received carries the value."""
    in_key: Check
    """True when the canonical request the cache key hashes carries the value."""


PROBES: dict[str, Probe] = {
    "provider": Probe(
        {"provider": "anthropic"},
        lambda b: "system" in b and b["model"] == "probe-model",  # the Messages API's shape
        lambda k: k["provider"] == "anthropic",
    ),
    "model": Probe(
        {"model": "another-model"},
        lambda b: b["model"] == "another-model",
        lambda k: k["model"] == "another-model",
    ),
    "temperature": Probe(
        {"temperature": 0.7},
        lambda b: b.get("temperature") == 0.7,
        lambda k: k["temperature"] == 0.7,
    ),
    "max_tokens": Probe(
        {"max_tokens": 333},
        lambda b: b.get("max_tokens") == 333,
        lambda k: k["max_tokens"] == 333,
    ),
    "extra": Probe(
        {"extra": {"top_p": 0.42}},
        lambda b: b.get("top_p") == 0.42,
        lambda k: k["extra"] == {"top_p": 0.42},
    ),
    "forced_choice": Probe(
        {"forced_choice": "required"},  # memory-only: every request is the forced submission
        lambda b: b.get("tool_choice") == "required",
        lambda k: k.get("forced_choice") == "required",
    ),
    "tool_protocol": Probe(
        {"tool_protocol": "text"},
        lambda b: "tools" not in b and "submit_action" in json.dumps(b["messages"]),
        lambda k: k.get("tool_protocol") == "text",
    ),
}
"""The fields that reach the model, each with its own oracle."""

DOCUMENTED: dict[str, dict[str, Any]] = {
    "name": {},  # every agent has its own name already
    "base_url": {},  # every agent has its own URL path already
    "api_key_env": {"api_key_env": "TB_PROBE_KEY"},
    "max_steps": {"max_steps": 5},
    "timeout_s": {"timeout_s": 30.0},
    "max_attempts": {"max_attempts": 2},
    "knowledge_cutoff": {"knowledge_cutoff": "2020-01-01"},
    "limits": {"limits": {"rpm": 600, "tpm": 1_000_000}},
    "endpoint": {"endpoint": "vllm"},
}
"""Documented fields a model agent can set: each changed on its own agent (`agent` and
`args` belong to rule agents, which send nothing)."""


def test_every_agent_field_is_probed_or_documented() -> None:
    fields = (set(AgentEntry.model_fields) - {"model"}) | set(ModelConfig.model_fields)
    assert AgentEntry.model_fields["model"].annotation == ModelConfig | None
    assert set(NOT_SENT_TO_MODEL) <= fields, "a documented field that no longer exists"
    neither = fields - set(PROBES) - set(NOT_SENT_TO_MODEL)
    assert not neither, f"fields neither probed here nor in NOT_SENT_TO_MODEL: {neither}"
    assert not set(PROBES) & set(NOT_SENT_TO_MODEL)
    assert set(DOCUMENTED) | {"agent", "args"} == set(NOT_SENT_TO_MODEL)
    assert set(NOT_SENT_TO_MODEL) >= AGENT_TRANSPORT_KEYS  # a rerun may change them
    docs = (ROOT / "docs" / "runs.md").read_text(encoding="utf-8")
    section = docs.split("### What reaches the model", 1)[1].split("\n#", 1)[0]
    for name in NOT_SENT_TO_MODEL:
        assert f"`{name}`" in section, f"{name} is not in docs/runs.md's list"


def _agent(name: str, port: int, **fields: Any) -> dict[str, Any]:
    wire = "anthropic" if fields.get("provider") == "anthropic" else "openai"
    url = f"http://127.0.0.1:{port}/{name}" + ("" if wire == "anthropic" else "/v1")
    return {"name": name, "provider": "openai", "model": "probe-model", "base_url": url,
            "max_tokens": 256, **fields}  # fmt: skip


def _spec(dataset: Path, agents: list[dict[str, Any]], cache: Path, **extra: Any) -> RunSpec:
    return RunSpec.model_validate(
        {
            "dataset": str(dataset),
            "windows": [{"start": "2024-03-01", "end": "2024-03-01"}],
            "modes": ["memory_only"],
            "masks": ["bright"],
            "agents": agents,
            "concurrency": 2,
            "cache": {"path": str(cache)},
            **extra,
        }
    )


def _rows(cache: Path) -> list[tuple[str, dict[str, Any]]]:
    """The cache's rows as (key, request), decoded from the stored form."""
    stored = ResponseCache(cache, mode="replay")
    try:
        return [(row.key, json.loads(row.request)) for row in stored.rows()]
    finally:
        stored.close()


@dataclass(frozen=True)
class Seen:
    """What the probes produced: requests by agent path, cache rows after each run."""

    requests: dict[str, list[dict[str, Any]]]
    first: list[tuple[str, dict[str, Any]]]
    second: list[tuple[str, dict[str, Any]]]


@pytest.fixture(scope="module")
def seen(cn_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Seen:
    """One step of every agent, then the base agent again at seeds 0 and 5 under another
    prompt version; all on one cache."""
    tmp = tmp_path_factory.mktemp("spec_to_request")
    cache = tmp / "cache.sqlite"
    with pytest.MonkeyPatch.context() as mp, LoopbackServer() as server:
        for var in ("TB_PROBE_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
            mp.setenv(var, "sk-probe-not-a-real-key")
        agents = [_agent("base", server.port)]
        agents += [_agent(f"p-{f}", server.port, **p.value) for f, p in PROBES.items()]
        agents += [_agent(f"d-{f}", server.port, **v) for f, v in DOCUMENTED.items()]
        asyncio.run(run_spec(_spec(cn_dataset_dir, agents, cache), tmp / "one"))
        first = _rows(cache)
        again = _spec(
            cn_dataset_dir, agents[:1], cache, seeds=[0, 5], options={"prompt_version": "v2"}
        )
        asyncio.run(run_spec(again, tmp / "two"))
        requests: dict[str, list[dict[str, Any]]] = {}
        for r in server.requests:
            requests.setdefault(_agent_of(r), []).append(r.body or {})
    return Seen(requests, first, _rows(cache)[len(first) :])


def _agent_of(request: RecordedRequest) -> str:
    return request.path.strip("/").split("/", 1)[0]


@pytest.mark.parametrize("field", sorted(PROBES))
def test_a_field_that_reaches_the_model_is_in_the_request_and_the_key(
    seen: Seen, field: str
) -> None:
    probe = PROBES[field]
    bodies = seen.requests.get(f"p-{field}", [])
    assert bodies and all(probe.in_body(b) for b in bodies), f"{field} not in the request"
    keyed = [k for k, request in seen.first if probe.in_key(request)]
    assert keyed, f"{field} not in the cache key's request"
    base = seen.requests["base"][0]
    assert not probe.in_body(base), "the probe cannot tell the base agent apart"


def test_documented_fields_leave_the_key_as_it_was(seen: Seen) -> None:
    """Besides the probes' rows, the cache holds one row, the base agent's: a documented
    field that entered the key would add a row (its agent's request would no longer match
    the base's)."""
    base = [r for _, r in seen.first if not any(p.in_key(r) for p in PROBES.values())]
    assert len(base) == 1, base
    for field in DOCUMENTED:
        for body in seen.requests.get(f"d-{field}", []):  # a cache hit sends nothing
            assert body == seen.requests["base"][0]


def test_the_seed_and_the_prompt_version_reach_the_request_and_the_key(seen: Seen) -> None:
    two = seen.requests["base"][1:]
    assert sorted(b["seed"] for b in two) == [0, 5]  # the sample is the sampling seed
    (key_a, request_a), (key_b, request_b) = seen.second
    assert key_a != key_b and request_a == request_b  # one request, two samples: two keys
    base = next(r for _, r in seen.first if not any(p.in_key(r) for p in PROBES.values()))
    assert request_a["messages"][0] != base["messages"][0]  # v2's system prompt, not v3's
    assert two[0]["messages"][0] != seen.requests["base"][0]["messages"][0]
