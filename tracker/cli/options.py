"""The options every `gpu-tracker` command shares: `--config`, `--db` and `-v`, accepted before
or after the command, and the filter types that take what a person types (provider aliases in
any case, `on-demand` or `on_demand`) or refuse it naming what is accepted.

Each global option is declared on the group and on every subcommand; their values land in
`ctx.meta`, which all the contexts of one invocation share. The command line is parsed left to
right, so a value given after the command (the subcommand's) replaces one given before it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from collectors.common import KIND_LABELS, PRICE_KINDS, ConfigError, PriceKind, parse_kind

if TYPE_CHECKING:  # generic for the type checker; older click is not at run time
    _TextType = click.ParamType[str]
else:
    _TextType = click.ParamType

_META_KEY = "gpu_tracker.options"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def chosen(ctx: click.Context, name: str) -> Any:
    """The value of global option `name` (`config_path`, `db`, `verbose`), None when not given."""
    return ctx.meta.get(_META_KEY, {}).get(name)


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if value is None or value is False:  # not given here: keep what an earlier place gave
        return value
    ctx.meta.setdefault(_META_KEY, {})[param.name] = value
    if param.name == "verbose" and ctx.parent is not None:
        setup_logging(verbose=True)  # given after the command: the group has set up already
    return value


def _global_options() -> list[click.Option]:
    path = click.Path(dir_okay=False, path_type=Path)
    return [
        click.Option(
            ["--config", "config_path"],
            type=path,
            metavar="PATH",
            expose_value=False,
            callback=_remember,
            help="config.toml to use (default: ./config.toml, else built-in defaults).",
        ),
        click.Option(
            ["--db", "db"],
            type=path,
            metavar="PATH",
            expose_value=False,
            callback=_remember,
            help="The store (a DuckDB file). Overrides $GPU_TRACKER_DB and [storage] path.",
        ),
        click.Option(
            ["-v", "--verbose"],
            is_flag=True,
            expose_value=False,
            callback=_remember,
            help="Log what each provider does; errors in full.",
        ),
    ]


def add_global_options(command: click.Command) -> None:
    """Declare the global options on `command` and, for a group, on every command below it."""
    command.params.extend(_global_options())
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            add_global_options(sub)


def setup_logging(*, verbose: bool) -> None:
    """Warnings only, unless -v. urllib3 warns of every retry of a connection it cannot make:
    without -v the run summary says how each provider ended, in one line."""
    logging.basicConfig(format=LOG_FORMAT)  # a no-op where handlers exist (a test's capture)
    logging.getLogger().setLevel(logging.INFO if verbose else logging.WARNING)
    logging.getLogger("urllib3").setLevel(logging.NOTSET if verbose else logging.ERROR)


class ProviderName(_TextType):
    """A provider's one name, from its name or an alias in any case (`AWS`, `lambda`)."""

    name = "provider"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from collectors import provider_name, provider_names

        found = provider_name(str(value))
        if found is None:
            self.fail(f"unknown provider {value!r} (accepted: {provider_names()})", param, ctx)
        return found


class PriceKindName(_TextType):
    """A price kind as stored (`on_demand`), from `on-demand`, `on_demand` or `On-Demand`."""

    name = "kind"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> PriceKind:
        try:
            return parse_kind(value, "--kind")
        except ConfigError:
            accepted = ", ".join(
                f"{KIND_LABELS[k]} (or {k})" if KIND_LABELS[k] != k else k for k in PRICE_KINDS
            )
            self.fail(f"unknown price kind {value!r} (accepted: {accepted})", param, ctx)


PROVIDER = ProviderName()
PRICE_KIND = PriceKindName()
