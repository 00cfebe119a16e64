"""`tradebench llm ...`: check an endpoint's tool calling, serve a bundled local model."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from tradebench.cli.kit import console, exits_on_error

app = typer.Typer(
    help="Talk to models: ping an endpoint, serve a small local model.", no_args_is_help=True
)


@app.command()
@exits_on_error
def ping(
    model: Annotated[str, typer.Argument(help="provider:model, e.g. openai:gpt-4.1-mini")],
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="Endpoint root (vLLM, Ollama, ...)")
    ] = None,
    api_key_env: Annotated[
        str | None, typer.Option("--api-key-env", help="Variable holding the key")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Per-attempt timeout, seconds")] = 60.0,
) -> None:
    """One forced tool-call round trip; exits 1 unless a valid tool call came back."""
    from tradebench.llm.ping import ping_model
    from tradebench.llm.retry import RetryPolicy
    from tradebench.llm.types import ModelConfig

    config = ModelConfig.parse(model, base_url=base_url, api_key_env=api_key_env, max_tokens=64)
    result = asyncio.run(ping_model(config, RetryPolicy(max_attempts=2, timeout_s=timeout)))
    verdict = "[green]yes[/]" if result.valid else f"[red]no[/] ({result.error})"
    console.print(f"{result.model}  latency {result.latency_s:.3f} s  attempts {result.attempts}")
    console.print(f"valid tool call: {verdict}", highlight=False)
    if result.tool_call is not None:
        console.print(
            f"call: {result.tool_call.name} {result.tool_call.raw_arguments}",
            highlight=False,
            markup=False,
        )
    if not result.valid:
        raise typer.Exit(code=1)


@app.command("serve-local")
@exits_on_error
def serve_local(
    port: Annotated[int, typer.Option(help="Port on the host")] = 8080,
    host: Annotated[str, typer.Option(help="Listen address")] = "127.0.0.1",
    model_path: Annotated[
        Path | None, typer.Option("--model", help="GGUF file (default: the bundled one)")
    ] = None,
    chat_format: Annotated[
        str | None, typer.Option(help="llama-cpp chat format, e.g. gemma")
    ] = None,
    n_ctx: Annotated[
        int, typer.Option(help="Context length (the memory-only prompt lists ~300 ids)")
    ] = 8192,
) -> None:
    """Serve a small bundled GGUF model behind an OpenAI-compatible API (Ctrl-C stops it)."""
    from tradebench.llm.local import BundledModel, LocalServer, find_bundled_model

    bundled = (
        find_bundled_model()
        if model_path is None
        else BundledModel(package="(file)", path=model_path.resolve(), chat_format=chat_format)
    )
    if chat_format is not None:
        bundled = bundled.model_copy(update={"chat_format": chat_format})
    server = LocalServer(bundled, host=host, port=port, n_ctx=n_ctx)
    with server:
        console.print(
            f"serving {bundled.path.name} at {server.base_url} (model name "
            f"'{server.alias}'); try: tradebench llm ping openai:{server.alias} "
            f"--base-url {server.base_url}",
            highlight=False,
        )
        server.serve_until_stopped()
    console.print("stopped")
