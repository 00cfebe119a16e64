"""Load the versioned prompt files of the portfolio benchmark and hash them.

Version `v3` (the default) is `v2` with the order format naming the bounds of the submit
schema (`submit_schema.SubmitLimits`: lengths and orders per reply, from the reply's token
cap). `v2` follows the KTD-Fin protocol: the trading rules are filled in from the engine's
`MarketRules` (`rules_text`), the order format is its own file, and no mode's wording nudges
the model to trade. `v1` and `v2` stay loadable so that earlier runs can be reproduced.
"""

from __future__ import annotations

from dataclasses import dataclass

from tradebench.benchmarks.portfolio.options import MODES
from tradebench.benchmarks.portfolio.rules_text import rules_values
from tradebench.benchmarks.portfolio.submit_schema import SubmitLimits
from tradebench.errors import ConfigError
from tradebench.market.rules import MarketRules
from tradebench.prompt_files import read_prompt_dir, texts_sha256

PROMPT_VERSION = "v3"
PACKAGE = "tradebench.benchmarks.portfolio.prompts"


@dataclass(frozen=True)
class PromptSet:
    """The system prompt per mode, the rules per market, the user template, their hash."""

    version: str
    system: dict[str, str]
    rules: dict[str, str]
    """Rules template per market (`cn`, `us`)."""
    order_format: str
    user: str
    sha256: str


def load_prompts(version: str = PROMPT_VERSION) -> PromptSet:
    """Read `prompts/<version>/` from the package; the hash covers every file's text."""
    systems = [f"system_{mode}.md" for mode in MODES]
    if version == "v1":
        texts = read_prompt_dir(PACKAGE, version, ["rules.md", "user.md", *systems])
        rules = {"cn": texts["rules.md"], "us": texts["rules.md"]}
        order_format = ""
    else:
        required = ["rules_cn.md", "rules_us.md", "order_format.md", "user.md", *systems]
        texts = read_prompt_dir(PACKAGE, version, required)
        rules = {"cn": texts["rules_cn.md"], "us": texts["rules_us.md"]}
        order_format = texts["order_format.md"]
    return PromptSet(
        version=version,
        system={mode: texts[f"system_{mode}.md"] for mode in MODES},
        rules=rules,
        order_format=order_format,
        user=texts["user.md"],
        sha256=texts_sha256(sorted(texts.items())),
    )


def rules_text(prompts: PromptSet, rules: MarketRules, currency: str = "CNY") -> str:
    """The trading rules as the model reads them, every number from `rules`."""
    template = prompts.rules.get(rules.market, prompts.rules["cn"])
    if prompts.version == "v1":
        return template.format(initial_cash=rules.initial_cash)
    return template.format(**rules_values(rules, currency))


def system_prompt(
    prompts: PromptSet,
    mode: str,
    rules: MarketRules,
    currency: str = "CNY",
    limits: SubmitLimits | None = None,
) -> str:
    """The system prompt of a mode with the rules and the order format filled in (the
    order format with the submit schema's `limits`; None: those of the default reply)."""
    if mode not in prompts.system:
        raise ConfigError(f"unknown mode {mode!r}; choose one of {list(MODES)}")
    values = (limits or SubmitLimits.for_tokens(None)).prompt_values()
    return (
        prompts.system[mode]
        .format(
            rules=rules_text(prompts, rules, currency).rstrip(),
            order_format=prompts.order_format.format(**values).rstrip(),
        )
        .rstrip()
        + "\n"
    )
