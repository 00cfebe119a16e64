"""Load the versioned persona prompt files, hash them, and fill them in.

Prompt files live in `prompts/<version>/`; every `.md` file of the version is part of the
hash a run records, so two runs with the same hash showed the model the same words.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources
from typing import Literal

from tradebench.benchmarks.single_stock.config import Persona, Stance
from tradebench.errors import ConfigError

PROMPT_VERSION = "v1"
SUBMIT_TOOL = "submit_decision"
ReplyFormat = Literal["tool", "json"]
_REQUIRED = (
    "system.md",
    "user.md",
    "nudge.md",
    "format_tool.md",
    "format_json.md",
    "stance_risk_seeking.md",
    "stance_risk_averse.md",
    "persona_risk_seeking.md",
    "persona_risk_averse.md",
    "persona_adaptive.md",
)


@dataclass(frozen=True)
class PromptSet:
    """The texts of one prompt version (file name -> text) and their sha256."""

    version: str
    texts: dict[str, str]
    sha256: str

    def text(self, name: str) -> str:
        """One file's text, stripped of its trailing newline."""
        return self.texts[name].rstrip("\n")


def load_prompts(version: str = PROMPT_VERSION) -> PromptSet:
    """Read `prompts/<version>/`; the hash covers every file's name and text.

    Raises:
        ConfigError: The version does not exist or lacks a required file.
    """
    root = resources.files("tradebench.benchmarks.single_stock.prompts").joinpath(version)
    if not root.is_dir():
        raise ConfigError(f"unknown single-stock prompt version {version!r}; use {PROMPT_VERSION}")
    texts = {
        p.name: p.read_text(encoding="utf-8")
        for p in sorted(root.iterdir(), key=lambda p: p.name)
        if p.name.endswith(".md")
    }
    missing = [n for n in _REQUIRED if n not in texts]
    if missing:
        raise ConfigError(f"prompt version {version!r} lacks {missing}")
    digest = hashlib.sha256()
    for name, text in sorted(texts.items()):
        digest.update(name.encode() + b"\0" + text.encode() + b"\0")
    return PromptSet(version=version, texts=texts, sha256=digest.hexdigest())


def _stances(prompts: PromptSet) -> dict[str, str]:
    """Stance descriptions as one line each (they are inlined into persona sentences)."""
    return {
        "risk_seeking": " ".join(prompts.text("stance_risk_seeking.md").split()),
        "risk_averse": " ".join(prompts.text("stance_risk_averse.md").split()),
    }


def system_prompt(prompts: PromptSet, persona: Persona, asset: str, fmt: ReplyFormat) -> str:
    """The system prompt of a persona for one asset label, asking for `fmt` replies."""
    persona_text = prompts.text(f"persona_{persona}.md").format(**_stances(prompts))
    reply = prompts.text(f"format_{fmt}.md").format(submit=SUBMIT_TOOL)
    return prompts.text("system.md").format(asset=asset, persona=persona_text, reply_format=reply)


def stance_line(persona: Persona, stance: Stance) -> str:
    """The `Stance today` line of the daily message."""
    label = stance.replace("_", "-")
    if persona == "adaptive":
        why = "cumulative return >= 0" if stance == "risk_seeking" else "cumulative return < 0"
        return f"{label} (adaptive persona: {why})"
    return f"{label} (your persona)"


def nudge_text(prompts: PromptSet, error: str) -> str:
    """The format nudge sent after an unreadable reply (JSON reply format)."""
    return prompts.text("nudge.md").format(error=error[:200])
