"""Load the versioned prompt files of the portfolio benchmark and hash them.

Version `v4` is KTD-Fin's protocol as its paper prints it: open-research states the goal
(the benchmark score), the information boundary (this message, the system context and tool
returns; tools see T-1 and earlier), a 1-3% cash buffer, no repeated BUY for a position near
its target and "when uncertain, trade less"; memory-only allows acting on a view about an
identifier; memory-only and fixed-candidate answer with one pure JSON object
(`answer_json.md`, the paper's form) or, as an option, through the forced tool
(`answer_tool.md`). Version `v3` (the default for specs that name none) is `v2` with the
order format naming the bounds of the submit schema (`submit_schema.SubmitLimits`: lengths
and orders per reply, from the reply's token cap). `v2` follows the KTD-Fin protocol: the
trading rules are filled in from the engine's `MarketRules` (`rules_text`), the order format
is its own file, and no mode's wording nudges the model to trade.
`v1` .. `v3` stay loadable so that earlier runs can be reproduced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from tradebench.benchmarks.portfolio.options import MODES
from tradebench.benchmarks.portfolio.rules_text import rules_values
from tradebench.benchmarks.portfolio.submit_schema import SubmitLimits
from tradebench.errors import ConfigError
from tradebench.market.rules import MarketRules
from tradebench.prompt_files import read_prompt_dir, texts_sha256

AnswerForm = Literal["json", "tool"]
PROMPT_VERSION = "v3"
PAPER_PROMPT_VERSION = "v4"
"""The version that carries every instruction KTD-Fin's paper prints."""
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
    answers: dict[str, str] = field(default_factory=dict)
    """Closing instruction per answer form (`json`, `tool`); empty before `v4`, whose
    prompts always answer through the forced tool."""

    @property
    def default_answer_form(self) -> AnswerForm:
        """The form memory-only and fixed-candidate answer in: `json` where the version
        has it (the paper's form), else `tool`."""
        return "json" if "json" in self.answers else "tool"


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
    answers = {
        form: texts[f"answer_{form}.md"]
        for form in ("json", "tool")
        if f"answer_{form}.md" in texts
    }
    return PromptSet(
        version=version,
        system={mode: texts[f"system_{mode}.md"] for mode in MODES},
        rules=rules,
        order_format=order_format,
        user=texts["user.md"],
        answers=answers if version not in ("v1",) else {},
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
    answer_form: AnswerForm = "tool",
) -> str:
    """The system prompt of a mode with the rules and the answer format filled in (the
    format with the submit schema's `limits`; None: those of the default reply). Under
    `answer_form="json"` the order format is the JSON object's (`answer_json.md`).

    Raises:
        ConfigError: Unknown mode, or a JSON answer asked of a version without one.
    """
    if mode not in prompts.system:
        raise ConfigError(f"unknown mode {mode!r}; choose one of {list(MODES)}")
    if answer_form not in prompts.answers and answer_form == "json":
        raise ConfigError(
            f"prompt version {prompts.version!r} has no JSON answer form; use "
            f"prompt_version {PAPER_PROMPT_VERSION!r} or answer_form 'tool'"
        )
    values = (limits or SubmitLimits.for_tokens(None)).prompt_values()
    if answer_form == "json":
        order_format, answer = "", prompts.answers["json"].format(**values)
    else:
        order_format = prompts.order_format.format(**values)
        answer = prompts.answers.get("tool", "")
    text = prompts.system[mode].format(
        rules=rules_text(prompts, rules, currency).rstrip(),
        order_format=order_format.rstrip(),
        answer=answer.rstrip(),
    )
    if answer_form == "json":  # the empty order format leaves a gap
        text = re.sub(r"\n{3,}", "\n\n", text)
    return text.rstrip() + "\n"
