"""Load the versioned persona prompt files, hash them, and fill them in.

Prompt files live in `prompts/<version>/`; every `.md` file of the version is part of the
hash a run records, so two runs with the same hash showed the model the same words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tradebench.benchmarks.single_stock.config import Persona, Stance
from tradebench.prompt_files import read_prompt_dir, texts_sha256

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
    texts = read_prompt_dir("tradebench.benchmarks.single_stock.prompts", version, _REQUIRED)
    return PromptSet(version=version, texts=texts, sha256=texts_sha256(sorted(texts.items())))


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
