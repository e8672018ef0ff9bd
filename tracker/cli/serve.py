"""`gpu-tracker serve`: the read-only web dashboard over the store, in the foreground until
interrupted (the daemon serves the same page with `[web] listen`)."""

from __future__ import annotations

import click

from collectors.common import ConfigError
from tracker.cli import common
from tracker.cli.common import EXIT_USAGE, fail, load_config, say


@click.command()
@click.option(
    "--listen",
    metavar="HOST:PORT",
    help="Where to listen (default: [web] listen, else 127.0.0.1:8080; port 0: any free port).",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow an address other machines can reach (the page has no login: put it behind "
    "your reverse proxy).",
)
@click.pass_context
def serve(ctx: click.Context, listen: str | None, allow_remote: bool) -> None:
    """Serve the read-only dashboard: current offers, history charts, TCO, collection health."""
    from tracker.config import web as web_settings

    config = load_config(ctx)
    try:
        chosen = config.web
        if listen is not None or chosen.host is None:
            host, port = web_settings.parse_listen(
                listen or web_settings.DEFAULT_LISTEN, "--listen"
            )
            chosen = web_settings.WebSettings(host, port, allow_remote or chosen.allow_remote)
        web_settings.checked(chosen, "--listen", "--allow-remote")
    except ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
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
        running.thread.join()
    except KeyboardInterrupt:
        say(err, "stopped")
    finally:
        running.close()
