"""Named endpoint presets: where a known OpenAI-compatible host or local server listens, the
variable its key is read from, and what it is known to accept.

A preset is chosen with `endpoint:` in a model's configuration (a spec's agent entry) or
`--endpoint NAME` on the command line. It fills `base_url` and `api_key_env` where they are
not given (either may still be set beside it: a vLLM server on another port keeps the vLLM
capabilities) and tells the OpenAI adapter which `tool_choice` forms the endpoint takes, so
a forced tool call starts on the first rung of the ladder the endpoint accepts
(`openai_provider`) instead of learning it from a refusal. The ladder still steps down when
an endpoint turns out stricter than its preset says.

`quirks` names the loopback server's personalities (`loopback.Quirk`) that reproduce the
endpoint's known behaviour; the tests run every preset against them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from tradebench.errors import ConfigError

ChoiceForm = Literal["object", "required", "auto", "none"]
StartRung = Literal["object", "required", "auto"]
"""The rung of the forced-call ladder a preset starts on (`llm.types.Rung`, less `text`)."""
"""A `tool_choice` value form: the object naming a tool, or one of the three strings."""


class EndpointPreset(BaseModel):
    """One known endpoint and its capability defaults."""

    model_config = ConfigDict(frozen=True)

    name: str
    """The preset's name (`--endpoint NAME`)."""
    base_url: str
    """Endpoint root, OpenAI style (with `/v1` or the host's equivalent)."""
    api_key_env: str | None
    """Variable holding the key; None for local servers that take none (no key is sent)."""
    tool_choice_forms: tuple[ChoiceForm, ...]
    """The `tool_choice` forms the endpoint honours (absent: refused or silently ignored;
    empty: the field must be left out)."""
    parallel_tool_calls: bool
    """Several tool calls come back in one reply."""
    json_mode: bool
    """`response_format` JSON output is available."""
    reasoning_output: bool
    """Thinking models return their reasoning apart (`reasoning_content` / `reasoning`)."""
    quirks: tuple[str, ...] = ()
    """Loopback personalities reproducing the endpoint's behaviour (for the tests)."""
    note: str = ""
    """What the capability defaults rest on."""

    def first_rung(self) -> StartRung:
        """The strongest rung of the forced-call ladder this endpoint honours: the object
        form, else `required`, else no `tool_choice` with an instruction."""
        if "object" in self.tool_choice_forms:
            return "object"
        if "required" in self.tool_choice_forms:
            return "required"
        return "auto"

    def sends_auto(self) -> bool:
        """True when `tool_choice: auto` may be sent (else it is left out: the default)."""
        return "auto" in self.tool_choice_forms


_ALL: tuple[ChoiceForm, ...] = ("object", "required", "auto", "none")
PRESETS: dict[str, EndpointPreset] = {
    p.name: p
    for p in (
        EndpointPreset(
            name="vllm",
            base_url="http://127.0.0.1:8000/v1",
            api_key_env=None,
            tool_choice_forms=_ALL,
            parallel_tool_calls=True,
            json_mode=True,
            reasoning_output=True,
            note="named and required tool_choice are grammar-guided (vLLM >= 0.8.3); "
            "reasoning parsers return reasoning_content",
        ),
        EndpointPreset(
            name="llama.cpp",
            base_url="http://127.0.0.1:8080/v1",
            api_key_env=None,
            tool_choice_forms=("required", "auto", "none"),
            parallel_tool_calls=True,
            json_mode=True,
            reasoning_output=True,
            quirks=("object_choice_ignored",),
            note="llama-server reads tool_choice as a string: the object form is dropped "
            "and the request runs as auto",
        ),
        EndpointPreset(
            name="ollama",
            base_url="http://127.0.0.1:11434/v1",
            api_key_env=None,
            tool_choice_forms=("auto",),
            parallel_tool_calls=True,
            json_mode=True,
            reasoning_output=True,
            quirks=("choice_ignored",),
            note="Ollama's OpenAI layer ignores tool_choice unread",
        ),
        EndpointPreset(
            name="lmstudio",
            base_url="http://127.0.0.1:1234/v1",
            api_key_env=None,
            tool_choice_forms=("required", "auto", "none"),
            parallel_tool_calls=False,
            json_mode=True,
            reasoning_output=True,
            quirks=("object_choice_rejected",),
            note="LM Studio refuses the object form of tool_choice with HTTP 400",
        ),
        EndpointPreset(
            name="openrouter",
            base_url="https://openrouter.ai/api/v1",
            api_key_env="OPENROUTER_API_KEY",
            tool_choice_forms=_ALL,
            parallel_tool_calls=True,
            json_mode=True,
            reasoning_output=True,
            quirks=("reasoning",),
            note="routes to providers that honour tool_choice; reasoning in `reasoning`",
        ),
        EndpointPreset(
            name="deepseek",
            base_url="https://api.deepseek.com/v1",
            api_key_env="DEEPSEEK_API_KEY",
            tool_choice_forms=(),
            parallel_tool_calls=True,
            json_mode=True,
            reasoning_output=True,
            quirks=("choice_rejected", "reasoning", "cached_usage"),
            note="the thinking models refuse any tool_choice but the default; prompt cache "
            "hits come back as prompt_cache_hit_tokens",
        ),
        EndpointPreset(
            name="together",
            base_url="https://api.together.xyz/v1",
            api_key_env="TOGETHER_API_KEY",
            tool_choice_forms=_ALL,
            parallel_tool_calls=True,
            json_mode=True,
            reasoning_output=True,
        ),
        EndpointPreset(
            name="groq",
            base_url="https://api.groq.com/openai/v1",
            api_key_env="GROQ_API_KEY",
            tool_choice_forms=_ALL,
            parallel_tool_calls=True,
            json_mode=True,
            reasoning_output=True,
        ),
        EndpointPreset(
            name="dashscope",
            base_url="https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
            api_key_env="DASHSCOPE_API_KEY",
            tool_choice_forms=("object", "auto", "none"),
            parallel_tool_calls=True,
            json_mode=True,
            reasoning_output=True,
            quirks=("reasoning", "cached_usage"),
            note="Qwen on Alibaba Cloud Model Studio; Qwen3 thinking returns reasoning_content",
        ),
        EndpointPreset(
            name="moonshot",
            base_url="https://api.moonshot.ai/v1",
            api_key_env="MOONSHOT_API_KEY",
            tool_choice_forms=("auto", "none"),
            parallel_tool_calls=True,
            json_mode=True,
            reasoning_output=True,
            quirks=("none_auto_only", "cached_usage"),
            note="Kimi takes tool_choice none or auto only",
        ),
        EndpointPreset(
            name="zhipu",
            base_url="https://open.bigmodel.cn/api/paas/v4",
            api_key_env="ZHIPUAI_API_KEY",
            tool_choice_forms=("auto", "none"),
            parallel_tool_calls=False,
            json_mode=True,
            reasoning_output=True,
            quirks=("none_auto_only", "reasoning"),
            note="GLM documents tool_choice auto only",
        ),
    )
}
"""The presets by name."""
PRESETS["qwen"] = PRESETS["dashscope"].model_copy(update={"name": "qwen"})


def preset(name: str) -> EndpointPreset:
    """The preset called `name`.

    Raises:
        ConfigError: No such preset (the known names are listed).
    """
    found = PRESETS.get(name)
    if found is None:
        raise ConfigError(f"unknown endpoint {name!r}; known: {', '.join(sorted(PRESETS))}")
    return found
