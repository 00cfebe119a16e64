"""`tradebench serve`: serve an episode to an outside agent scaffold (`serve mcp`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tradebench.cli.kit import err_console, exits_on_error
from tradebench.errors import ConfigError

app = typer.Typer(
    help=(
        "Serve one episode of a run spec to an outside agent scaffold over MCP (stdio or "
        "streamable HTTP).\n\nExample: tradebench serve mcp spec.yaml -o runs/mcp"
    ),
    no_args_is_help=True,
)
MCP_EXTRA = "the MCP server needs the mcp package: pip install 'tradebench[mcp]'"


@app.command("mcp")
@exits_on_error(
    interrupted="stopped (Ctrl-C): every completed day of the episode is saved in {out}; "
    "serve the same spec into the same folder to continue it"
)
def mcp(
    spec: Annotated[Path, typer.Argument(help="Run spec (YAML) of the portfolio benchmark.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder (serve again to resume).")],
    episode: Annotated[
        str | None,
        typer.Option(
            "--episode",
            help="Episode id of a model cell of the grid (default: the first unfinished one).",
        ),
    ] = None,
    http: Annotated[
        int | None,
        typer.Option(
            "--http",
            min=1,
            max=65535,
            help="Serve streamable HTTP on this port (at /mcp) instead of stdio.",
        ),
    ] = None,
    host: Annotated[
        str, typer.Option(help="Address the HTTP server listens on (with --http).")
    ] = "127.0.0.1",
) -> None:
    """Serve one model episode of SPEC as an MCP server: an outside agent plays it.

    The client gets the episode's research tools (open-research mode), `submit_action` and
    `get_observation`, under the spec's mask, point-in-time view, tool limits and retries.
    Each accepted submission ends the day and returns the next day's observation. Days
    are journaled into OUT/episodes/<id>/ as in `tradebench run` (steps, orders,
    positions, trace); the summary is written when the episode ends, then `tradebench
    report OUT`. Stop the server at any time: serving the same spec into the same folder
    continues after the last completed day. The grid's index reference and rule baselines
    run beside it. stdio is the default transport (the client starts this command);
    --http PORT serves http://HOST:PORT/mcp until stopped.

    Example: tradebench serve mcp spec.yaml -o runs/mcp --http 8765
    """
    import asyncio

    try:
        from tradebench.integrations import mcp_server
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] in ("mcp", "mcp_types"):
            raise ConfigError(MCP_EXTRA) from None
        raise
    from tradebench.integrations.mcp_episode import ServeRequest, serve_episode
    from tradebench.runs.spec import RunSpec

    request = ServeRequest(RunSpec.load(spec), out, episode)
    where = "stdio" if http is None else f"http://{host}:{http}/mcp"
    transport = mcp_server.serve_stdio if http is None else mcp_server.http_transport(host, http)

    def started(ref: object, done: int) -> None:
        err_console.print(
            f"serving episode {getattr(ref, 'id', ref)} over {where} "
            f"({done} day(s) already done); run folder {out}",
            highlight=False,
            markup=False,
        )

    served = asyncio.run(serve_episode(request, transport, started))
    if served.finished:
        text = f"episode {served.ref.id} is over; next: tradebench report {out}"
    else:
        text = (
            f"the client left episode {served.ref.id} before its end: its completed days are "
            f"saved in {out}; serve the same spec into the same folder to continue"
        )
    err_console.print(text, highlight=False, markup=False)
