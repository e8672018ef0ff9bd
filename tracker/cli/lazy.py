"""The command's subcommands, imported when one runs (or when help lists them): click's lazy
group pattern (docs/performance.md, "Start-up"), so `gpu-tracker sql` pays for the query
module only, not for the daemon's scheduler, the web server or the collectors.

The group's `commands` is a mapping that knows every name from the start and imports a
command's module the first time the command is looked up; click's own `get_command` and
`list_commands` then work unchanged (the names list without importing anything)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping

import click


class LazyCommands(MutableMapping[str, click.Command]):
    """Subcommands by name: `"module:attribute"` until first looked up, the command after.
    `prepare` runs once on each command loaded (the global options are declared on it)."""

    def __init__(self, where: Mapping[str, str], prepare: Callable[[click.Command], None]) -> None:
        self._where = dict(where)
        self._loaded: dict[str, click.Command] = {}
        self._prepare = prepare

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            module, _, attribute = self._where[name].partition(":")  # KeyError: no such command
            command = getattr(importlib.import_module(module), attribute)
            if not isinstance(command, click.Command):
                raise TypeError(f"{self._where[name]} is not a click command")
            self._prepare(command)
            self._loaded[name] = command
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._where.pop(name, None)
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        found = self._where.pop(name, None) or self._loaded.get(name)
        self._loaded.pop(name, None)
        if found is None:
            raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._where, *self._loaded]))

    def __len__(self) -> int:
        return len(set(self._where) | set(self._loaded))

    def __contains__(self, name: object) -> bool:
        return name in self._where or name in self._loaded
