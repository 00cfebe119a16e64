"""Load the versioned prompt files of the portfolio benchmark and hash them."""

from __future__ import annotations

from dataclasses import dataclass

from tradebench.benchmarks.portfolio.options import MODES
from tradebench.errors import ConfigError
from tradebench.prompt_files import read_prompt_dir, texts_sha256

PROMPT_VERSION = "v1"


@dataclass(frozen=True)
class PromptSet:
    """The system prompt per mode, the shared rules and user template, and their hash."""

    version: str
    system: dict[str, str]
    rules: str
    user: str
    sha256: str


def load_prompts(version: str = PROMPT_VERSION) -> PromptSet:
    """Read `prompts/<version>/` from the package; the hash covers every file's text."""
    required = ["rules.md", "user.md", *(f"system_{mode}.md" for mode in MODES)]
    texts = read_prompt_dir("tradebench.benchmarks.portfolio.prompts", version, required)
    digest = texts_sha256(sorted(texts.items()))
    return PromptSet(
        version=version,
        system={mode: texts[f"system_{mode}.md"] for mode in MODES},
        rules=texts["rules.md"],
        user=texts["user.md"],
        sha256=digest,
    )


def system_prompt(prompts: PromptSet, mode: str, initial_cash: float) -> str:
    """The system prompt of a mode with the rules filled in."""
    if mode not in prompts.system:
        raise ConfigError(f"unknown mode {mode!r}; choose one of {list(MODES)}")
    rules = prompts.rules.format(initial_cash=initial_cash)
    return prompts.system[mode].format(rules=rules)
