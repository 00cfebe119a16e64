"""The LLM attacker: show a model the masked payloads and ask who and when they are.

The model gets the payloads exactly as the agent saw them plus what a well-informed
attacker knows anyway (market, index universe, the date range, board rules) and must
call `submit_guess` (forced tool, the robust way to get JSON from small models). Invalid
submissions get feedback and a retry; a payload without a valid submission is a failure.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from importlib import resources

from tradebench.agents.tool_loop import LoopConfig, run_tool_loop
from tradebench.agents.tools import SubmitTool
from tradebench.data.indexes import index_name
from tradebench.llm.base import ChatModel
from tradebench.llm.types import ModelConfig
from tradebench.probe.attempt import Attempt
from tradebench.probe.types import AttackGuess, Probe, ProbeSetHeader, Variant
from tradebench.runs.models import ModelPool

SUBMIT_NAME = "submit_guess"
MARKETS = {
    "cn": (
        "China A-shares (Shanghai and Shenzhen exchanges)",
        "Boards: `main_sh` (Shanghai main board, codes SH60xxxx, ±10% daily limit), "
        "`main_sz` (Shenzhen main board, SZ00xxxx, ±10%), `chinext` (ChiNext, SZ30xxxx, "
        "±20%), `star` (STAR market, SH688xxx, ±20%).",
        "SH600519 or SZ000001",
    ),
    "us": ("US equities", "Every stock has the board `us` (no daily limits).", "AAPL or MSFT"),
}


@lru_cache(maxsize=1)
def _templates() -> tuple[str, str]:
    root = resources.files("tradebench.probe").joinpath("prompts")
    return (
        root.joinpath("attacker_system.md").read_text(encoding="utf-8"),
        root.joinpath("attacker_user.md").read_text(encoding="utf-8"),
    )


def _index_phrase(symbol: str | None) -> str:
    """`CSI300 (SH000300)` for a known index, the symbol alone otherwise."""
    if not symbol:
        return "of the dataset"
    name = index_name(symbol)
    return symbol if name == symbol else f"{name} ({symbol})"


def attack_prompt(header: ProbeSetHeader, variant: Variant) -> tuple[str, str]:
    """(system, user) messages for one payload variant."""
    system, user = _templates()
    market, boards, example = MARKETS.get(header.market, MARKETS["us"])
    system = system.format(
        currency=header.currency,
        market=market,
        index=_index_phrase(header.index_symbol),
        first=header.calendar[header.date_lo].isoformat(),
        last=header.calendar[header.date_hi].isoformat(),
        boards=boards,
        example=example,
    )
    calls = "\n\n".join(
        f"{c['tool']} {json.dumps(c['arguments'], separators=(',', ':'))} ->\n"
        f"{json.dumps(c['result'], separators=(',', ':'), ensure_ascii=False)}"
        for c in variant.calls
    )
    return system, user.format(calls=calls, target=variant.target_id)


def submit_guess_tool() -> SubmitTool:
    """`submit_guess`: schema and validation from `AttackGuess`."""
    return SubmitTool.from_model(SUBMIT_NAME, "Submit your de-anonymisation guess.", AttackGuess)


def loop_config(retries: int, seed: int = 0) -> LoopConfig:
    """No research tools: go straight to the forced submission, with `retries` retries;
    every call is sample `seed` of the model."""
    return LoopConfig(
        max_tool_calls=0,
        max_submit_retries=retries,
        offer_submit_in_research=False,
        submit_prompt="Call `{submit}` now with your guess.",
        sample_index=seed,
    )


async def attack_one(
    model: ChatModel,
    header: ProbeSetHeader,
    probe: Probe,
    variant: Variant,
    label: str,
    retries: int = 2,
    seed: int = 0,
) -> Attempt:
    """One forced-submission loop for one payload variant (sample `seed` of the model)."""
    system, user = attack_prompt(header, variant)
    result = await run_tool_loop(
        model,
        system=system,
        user=user,
        tools=[],
        submit=submit_guess_tool(),
        config=loop_config(retries, seed),
    )
    submits = [c for c in result.tool_calls if c.name == SUBMIT_NAME]
    return Attempt(
        probe_id=probe.probe_id,
        level=variant.level,
        price_mode=variant.price_mode,
        attacker=label,
        guess=result.action,
        failure=None if result.action is not None else "no_valid_reply",
        unreadable=result.parse_failures,
        rejected=sum(not c.valid for c in submits),
        retries=result.retries,
        tokens_in=result.usage.input_tokens,
        tokens_out=result.usage.output_tokens,
        raw=submits[-1].raw_arguments[:500] if submits else None,
    )


def attacker_label(config: ModelConfig, seed: int = 0) -> str:
    """`provider:model`, with `@sN` for a sample other than the first."""
    return config.label + (f"@s{seed}" if seed else "")


async def attack_all(
    pool: ModelPool,
    config: ModelConfig,
    header: ProbeSetHeader,
    items: list[tuple[Probe, Variant]],
    retries: int = 2,
    seed: int = 0,
    on_attempt: Callable[[], None] | None = None,
) -> list[Attempt]:
    """Attack every (probe, variant) through the pool's model, at most the pool's
    concurrency in flight; attempts in item order; `on_attempt` is called as each one
    finishes (a progress bar).

    Raises:
        BudgetStop: The budget ran out; answered payloads are cached, rerun to continue.
    """
    model = pool.model(config)
    label = attacker_label(config, seed)

    async def one(item: tuple[Probe, Variant]) -> Attempt:
        attempt = await attack_one(model, header, *item, label, retries, seed)
        if on_attempt is not None:
            on_attempt()
        return attempt

    return await pool.map(items, one)
