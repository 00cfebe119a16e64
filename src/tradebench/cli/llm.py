"""`tradebench llm ...`: check an endpoint's tool calling, serve a bundled local model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tradebench.cli.kit import (
    ApiKeyEnv,
    BaseUrl,
    Endpoint,
    console,
    endpoint_fields,
    exits_on_error,
)
from tradebench.errors import ProviderError

app = typer.Typer(
    help="Talk to models: ping an endpoint, serve a small local model.\n\n"
    "Example: tradebench llm ping openai:gpt-4.1-mini",
    no_args_is_help=True,
)


@app.command()
@exits_on_error
def ping(
    model: Annotated[str, typer.Argument(help="provider:model, e.g. openai:gpt-4.1-mini")],
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    endpoint: Endpoint = None,
    timeout: Annotated[
        float, typer.Option(min=0.1, max=3600.0, help="Per-attempt timeout, seconds")
    ] = 60.0,
) -> None:
    """One forced tool-call round trip; exits 1 unless a valid tool call came back.

    Example: tradebench llm ping openai:local --base-url http://127.0.0.1:8080/v1
    """
    import asyncio

    from tradebench.llm.ping import ping_model
    from tradebench.llm.retry import RetryPolicy
    from tradebench.llm.types import ModelConfig

    where = endpoint_fields(endpoint, base_url, api_key_env)
    config = ModelConfig.parse(model, max_tokens=64, **where)
    result = asyncio.run(ping_model(config, RetryPolicy(max_attempts=2, timeout_s=timeout)))
    verdict = "[green]yes[/]" if result.valid else f"[red]no[/] ({result.error})"
    console.print(f"{result.model}  latency {result.latency_s:.3f} s  attempts {result.attempts}")
    console.print(f"valid tool call: {verdict}", highlight=False)
    if result.tool_choice_rung is not None:
        steps = result.tool_choice_fallbacks
        console.print(
            f"forced as: {result.tool_choice_rung} (after {steps} refused or ignored forms)"
            if steps
            else f"forced as: {result.tool_choice_rung}",
            highlight=False,
            markup=False,
        )
    if result.tool_call is not None:
        console.print(
            f"call: {result.tool_call.name} {result.tool_call.raw_arguments}",
            highlight=False,
            markup=False,
        )
    if not result.valid:
        raise ProviderError(f"{result.model}: no valid tool call came back ({result.error})")


@app.command("serve-local")
@exits_on_error
def serve_local(
    port: Annotated[int, typer.Option(help="Port on the host")] = 8080,
    host: Annotated[str, typer.Option(help="Listen address")] = "127.0.0.1",
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="A bundled model (smollm2, gemma) or a GGUF file (default: the first "
            "bundled model installed)",
        ),
    ] = None,
    chat_format: Annotated[
        str | None, typer.Option(help="llama.cpp chat format that renders the turns, e.g. gemma")
    ] = None,
    fold_system: Annotated[
        bool, typer.Option(help="The chat format has no system role: fold it into the user turn")
    ] = False,
    n_ctx: Annotated[
        int, typer.Option(help="Context length (the memory-only prompt lists ~300 ids)")
    ] = 8192,
    log: Annotated[
        Path | None, typer.Option(help="Write the server's log here (named in its errors)")
    ] = None,
    threads: Annotated[
        int | None,
        typer.Option(
            min=1, help="Threads for reading prompts and generating (default: the free cores)"
        ),
    ] = None,
) -> None:
    """Serve a small bundled GGUF model behind an OpenAI-compatible API (Ctrl-C stops it).

    Tools reach the model: the bundled models' chat templates drop them, so the server
    renders the tool catalogue into the prompt and returns the calls the model writes.

    Example: tradebench llm serve-local --port 8080
    """
    from tradebench.errors import ConfigError
    from tradebench.llm.local import (
        BUNDLED,
        BundledModel,
        LocalServer,
        find_bundled_model,
        free_cores,
    )

    if model is None or model in BUNDLED:
        bundled = find_bundled_model(model)
    else:
        path = Path(model)
        if not path.is_file():
            raise ConfigError(
                f"--model {model}: neither a bundled model ({', '.join(BUNDLED)}) nor a file"
            )
        bundled = BundledModel(package="(file)", path=path.resolve())
    if chat_format is not None or fold_system:
        update = {"fold_system": fold_system or bundled.fold_system}
        if chat_format is not None:
            update["chat_format"] = chat_format
        bundled = bundled.model_copy(update=update)
    threads = threads or free_cores()
    server = LocalServer(
        bundled, host=host, port=port, n_ctx=n_ctx, n_threads=threads, log_path=log
    )
    with server:
        console.print(
            f"serving {bundled.path.name} at {server.base_url} on {threads} thread(s) "
            f"(model name '{server.alias}'); try: tradebench llm ping openai:{server.alias} "
            f"--base-url {server.base_url}",
            highlight=False,
        )
        server.serve_until_stopped()
    console.print("stopped")
