"""Load the versioned prompt files of the portfolio benchmark and hash them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources

from tradebench.errors import ConfigError

PROMPT_VERSION = "v1"
MODES = ("memory_only", "fixed_candidate", "open_research")


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
    root = resources.files("tradebench.benchmarks.portfolio.prompts").joinpath(version)
    if not root.is_dir():
        raise ConfigError(f"unknown prompt version {version!r}")
    texts = {
        p.name: p.read_text(encoding="utf-8")
        for p in sorted(root.iterdir(), key=lambda p: p.name)
        if p.name.endswith(".md")
    }
    digest = hashlib.sha256()
    for name, text in sorted(texts.items()):
        digest.update(name.encode() + b"\0" + text.encode() + b"\0")
    return PromptSet(
        version=version,
        system={mode: texts[f"system_{mode}.md"] for mode in MODES},
        rules=texts["rules.md"],
        user=texts["user.md"],
        sha256=digest.hexdigest(),
    )


def system_prompt(prompts: PromptSet, mode: str, initial_cash: float) -> str:
    """The system prompt of a mode with the rules filled in."""
    if mode not in prompts.system:
        raise ConfigError(f"unknown mode {mode!r}; choose one of {list(MODES)}")
    rules = prompts.rules.format(initial_cash=initial_cash)
    return prompts.system[mode].format(rules=rules)
