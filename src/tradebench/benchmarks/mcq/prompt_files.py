"""The MCQ prompts (files under `prompts/`): loading, `$name` substitution and their hash.

Prompts are plain Markdown files shipped with the package so they can be read and versioned
as text; `$name` placeholders (`string.Template`) leave code braces in them untouched. The
hash of every prompt file goes into evaluation summaries and mining records, so a result
names the exact wording it was produced with.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from string import Template

from tradebench.errors import ConfigError
from tradebench.prompt_files import texts_sha256

PROMPT_NAMES = (
    "solver_no_tools",
    "solver_no_tools_reasoning",
    "solver_with_tools",
    "solver_text_tools",
    "solver_agent",
    "question",
    "mine_generator_system",
    "mine_generator",
)
"""Every prompt file (without `.md`)."""


@cache
def load_prompt(name: str) -> str:
    """The text of `prompts/<name>.md` (trailing newline removed)."""
    if name not in PROMPT_NAMES:
        raise ConfigError(f"unknown MCQ prompt {name!r}; known: {', '.join(PROMPT_NAMES)}")
    root = resources.files("tradebench.benchmarks.mcq").joinpath("prompts", f"{name}.md")
    return root.read_text(encoding="utf-8").rstrip("\n")


def render(name: str, **values: object) -> str:
    """Prompt `name` with its `$placeholders` filled; a missing value is a `ConfigError`."""
    try:
        return Template(load_prompt(name)).substitute({k: str(v) for k, v in values.items()})
    except KeyError as exc:
        raise ConfigError(f"prompt {name!r} needs a value for {exc.args[0]!r}") from None


def prompts_sha256(names: tuple[str, ...] = PROMPT_NAMES) -> str:
    """SHA-256 over the named prompt files (name and text of each, in the given order)."""
    return texts_sha256((name, load_prompt(name)) for name in names)
