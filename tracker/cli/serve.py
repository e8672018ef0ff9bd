"""`gpu-tracker serve`: the read-only web dashboard over the store, in the foreground until
stopped (the daemon serves the same page with `[web] listen`). SIGTERM, SIGINT (Ctrl-C) and
SIGHUP stop it the same way: requests in flight are finished, exit 0 (docs/web.md).

`gpu-tracker mcp`: the same JSON API for AI assistants, over the Model Context Protocol on
stdin and stdout, until the client closes them (docs/mcp.md)."""

from __future__ import annotations

import signal
import threading
from types import FrameType

import click

from collectors.common import ConfigError
from tracker.cli import common
from tracker.cli.common import EXIT_USAGE, fail, load_config, say

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@click.command()
@click.option(
    "--listen",
    metavar="HOST:PORT",
    help="Where to listen (default: [web] listen, else 127.0.0.1:8080; port 0: any free port).",
)
@click.option(
    "--allow-remote",
    "remote",
    multiple=True,
    is_flag=False,
    flag_value="",
    metavar="[NAME]",
    help="Allow an address other machines can reach (the page has no login: put it behind "
    "your reverse proxy); with NAME (repeatable), answer requests for that host name too.",
)
@click.pass_context
def serve(ctx: click.Context, listen: str | None, remote: tuple[str, ...]) -> None:
    """Serve the read-only dashboard: current offers, history charts, TCO, collection health."""
    from tracker.config import web as web_settings

    config = load_config(ctx)
    allow_remote = bool(remote)
    names = tuple(name for name in remote if name)
    try:
        for name in names:
            web_settings.host_name(name, "--allow-remote")
        chosen = config.web
        if listen is not None or chosen.host is None:
            host, port = web_settings.parse_listen(
                listen or web_settings.DEFAULT_LISTEN, "--listen"
            )
            chosen = web_settings.WebSettings(host, port, chosen.allow_remote)
        chosen = web_settings.WebSettings(
            chosen.host,
            chosen.port,
            allow_remote or chosen.allow_remote,
            (*config.web.allowed_hosts, *names),
        )
        web_settings.checked(chosen, "--listen", "--allow-remote")
    except ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    stop = _catch_stop_signals()
    from tracker.web.server import start_for

    try:
        running = start_for(config, chosen, "--listen")
    except ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    err = common.err(ctx)
    if not chosen.loopback:
        say(err, "warning: " + web_settings.NO_LOGIN.format(address=chosen.address))
    say(err, f"serving the dashboard of {config.store_path} on {running.url} (Ctrl-C stops it)")
    try:
        while not stop.wait(1.0):
            pass
        say(err, f"{signal.Signals(stop.signum).name} received: stopping")
    finally:
        running.close()
    say(err, "stopped")


@click.command()
@click.pass_context
def mcp(ctx: click.Context) -> None:
    """Serve the Model Context Protocol on stdin and stdout, for AI assistants: tools for
    latest, history, tco, index, gpus and read-only sql, each answering its command's JSON
    (docs/mcp.md). Register it with your assistant as the command `gpu-tracker mcp`."""
    config = load_config(ctx)
    from tracker.web.mcp import run  # the MCP SDK only in the command that serves it

    run(config)


class _Stop(threading.Event):
    signum: int = signal.SIGTERM


def _catch_stop_signals() -> _Stop:
    """SIGTERM, SIGINT and SIGHUP from now on set the returned event (the first one's number
    kept): the main thread then closes the server, rather than dying with its requests."""
    stop = _Stop()

    def remember(signum: int, _frame: FrameType | None) -> None:
        if not stop.is_set():
            stop.signum = signum
        stop.set()

    for signum in STOP_SIGNALS:
        signal.signal(signum, remember)
    return stop
