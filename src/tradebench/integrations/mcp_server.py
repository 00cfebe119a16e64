"""The MCP face of a served episode: its tools, their results, stdio and streamable HTTP.

Built on the official `mcp` SDK's low-level `Server`, so arguments reach the episode's own
validation untouched (the SDK checks none): a malformed submission gets the same structured
feedback a native model gets. The tools listed are the episode's research tools (in
open-research mode) with the descriptions and schemas a native model sees, `submit_action`,
and `get_observation`, which re-reads the day without acting. Every text a call returns is
the conversation's own (masked by the episode); the structured part says only where the
episode stands (day, phase).
"""

from __future__ import annotations

import json
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from tradebench import __version__
from tradebench.agents.tools import model_schema
from tradebench.benchmarks.portfolio.tools import SubmitAction
from tradebench.integrations.mcp_bridge import SUBMIT, ClientDrivenModel, Delivery
from tradebench.runs.protocol import EpisodeRef

OBSERVE = "get_observation"
INSTRUCTIONS = (
    "You manage a portfolio through one trading episode, one decision day at a time. Call "
    f"`{OBSERVE}` first: it returns the rules and today's observation. Research with the "
    f"read-only tools when they are offered, then decide with `{SUBMIT}`. An accepted "
    "submission ends the day: its result holds the next day's observation. A refused one "
    "says what to fix; after a refusal only the submit tool can be called that day, and "
    "when the attempts run out the day passes without trading. Where the rules ask you to "
    f"end research with a reply or to answer with a JSON object, call `{SUBMIT}` instead: "
    "its arguments are that answer."
)
SUBMIT_DESCRIPTION = (
    "Submit today's orders (may be empty). Name only ids shown to you today; SELL orders go "
    "before BUY orders; give each order exactly one of target_weight or shares. An accepted "
    "submission ends the day and returns the next day's observation."
)
OBSERVE_DESCRIPTION = (
    "Read the rules, today's observation and today's conversation so far, without acting."
)


def _tool(name: str, description: str, schema: dict[str, Any]) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema=schema)


def plain_schema(schema: Any) -> Any:
    """`schema` without its `title` and `description` keywords (the submission model's
    docstrings speak of the code, not of the task)."""
    if isinstance(schema, dict):
        return {k: plain_schema(v) for k, v in schema.items() if k not in ("title", "description")}
    if isinstance(schema, list):
        return [plain_schema(v) for v in schema]
    return schema


async def listed_tools(model: ClientDrivenModel) -> list[types.Tool]:
    """The tools of the episode: the research tools the loop offers (none outside open
    research), `submit_action` and `get_observation`."""
    await model.wait_ready()
    research = [t for t in model.offered_tools if t.name != SUBMIT]
    tools = [_tool(t.name, t.description, t.parameters) for t in research]
    tools.append(_tool(SUBMIT, SUBMIT_DESCRIPTION, plain_schema(model_schema(SubmitAction))))
    empty = {"type": "object", "properties": {}, "additionalProperties": False}
    tools.append(_tool(OBSERVE, OBSERVE_DESCRIPTION, empty))
    return tools


def _is_error(delivery: Delivery) -> bool:
    """A refusal, or a result the loop wrote as an error (`{"error": ...}`: a tool result,
    or the JSON answer form's feedback turn)."""
    if delivery.refused is not None:
        return True
    first = delivery.messages[0] if delivery.messages else None
    if first is None or first.role not in ("tool", "user"):
        return False
    try:
        payload = json.loads(first.content)
    except json.JSONDecodeError:
        return False
    return isinstance(payload, dict) and "error" in payload


def rendered(delivery: Delivery) -> types.CallToolResult:
    """A delivery as a tool result: one text block per message, the episode's position in
    the structured content (`roles` names each block's role)."""
    if delivery.refused is not None and not delivery.finished:
        blocks = [delivery.refused]
        roles = ["server"]
    else:
        blocks = [m.content for m in delivery.messages]
        roles = [m.role for m in delivery.messages]
    status = {
        "step": delivery.step,
        "total": delivery.total,
        "phase": delivery.phase,
        "new_day": delivery.new_day,
        "finished": delivery.finished,
        "roles": roles,
    }
    return types.CallToolResult(
        content=[types.TextContent(text=text) for text in blocks],
        structured_content=status,
        is_error=_is_error(delivery),
    )


def build_server(model: ClientDrivenModel, ref: EpisodeRef) -> Server[Any]:
    """The MCP server of one served episode (`ref` names it in the server's description)."""

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await listed_tools(model))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == OBSERVE:
            return rendered(await model.observation())
        return rendered(await model.call(params.name, params.arguments or {}))

    return Server(
        "tradebench",
        version=__version__,
        description=f"one tradebench portfolio episode ({ref.mode}, mask {ref.mask})",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(model: ClientDrivenModel, ref: EpisodeRef) -> None:
    """Serve the episode on stdin/stdout until the client closes the connection."""
    server = build_server(model, ref)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def http_transport(host: str, port: int) -> Any:
    """A transport serving the episode over streamable HTTP at `http://HOST:PORT/mcp`
    until the process is stopped (Ctrl-C, SIGTERM)."""

    async def serve(model: ClientDrivenModel, ref: EpisodeRef) -> None:
        import uvicorn

        app = build_server(model, ref).streamable_http_app(host=host)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
        await uvicorn.Server(config).serve()

    return serve
