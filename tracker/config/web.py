"""The `[web]` table of config.toml and the `--listen` of `gpu-tracker serve`, validated.

Loopback by default: the page has no login, so an address other machines can reach must be
asked for explicitly (`allow_remote = true`, `--allow-remote`) and is served with a warning.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from collectors.common import ConfigError
from tracker.config.keys import BOOLEAN, Key, Kind, Table, names

DEFAULT_LISTEN = "127.0.0.1:8080"
_LISTEN = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^:\s\[\]]+)):(?P<port>\d{1,5})$")
_HOST = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9.])?)$")
NO_LOGIN = (
    "the dashboard has no login: anyone who can reach {address} reads every price and run "
    "in the store; put it behind the reverse proxy you already trust (with its login)"
)


@dataclass(frozen=True)
class WebSettings:
    """Where the dashboard listens; `host` None: the daemon serves no page."""

    host: str | None = None
    port: int = 8080
    allow_remote: bool = False
    allowed_hosts: tuple[str, ...] = ()  # Host names answered beside the loopback ones

    @property
    def enabled(self) -> bool:
        return self.host is not None

    @property
    def loopback(self) -> bool:
        if self.host in (None, "localhost"):
            return True
        try:
            return ipaddress.ip_address(str(self.host)).is_loopback
        except ValueError:
            return False

    @property
    def address(self) -> str:
        host = str(self.host)
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"


def parse_listen(value: Any, key: str) -> tuple[str, int]:
    """'127.0.0.1:8080' or '[::1]:8080' -> (host, port); port 0 means any free port."""
    match = _LISTEN.match(value) if isinstance(value, str) else None
    if not match or not 0 <= int(match.group("port")) < 65536:
        raise ConfigError(
            f'{key}: {value!r} is not host:port like "127.0.0.1:8080" or "[::1]:8080"'
        )
    return match.group("v6") or match.group("host"), int(match.group("port"))


WEB = Table(
    "web",
    (
        Key(
            "listen",
            Kind("host:port; port 0: any free port", parse_listen),
            None,
            "where the dashboard is served (default: no page)",
        ),
        Key("allow_remote", BOOLEAN, False, "serve to other machines too (no login)"),
        Key(
            "allowed_hosts",
            names("host names"),
            [],
            "Host names the page answers to besides loopback ones (a reverse proxy's)",
        ),
    ),
)


def parse_web(raw: Mapping[str, Any]) -> WebSettings:
    """The `[web]` table: no `listen`, no page."""
    got = WEB.read(raw)
    extra = tuple(got["allowed_hosts"])
    for name in extra:
        host_name(name, "web.allowed_hosts")
    if got["listen"] is None:
        return WebSettings(allow_remote=got["allow_remote"], allowed_hosts=extra)
    host, port = got["listen"]
    return checked(
        WebSettings(host, port, got["allow_remote"], extra),
        "web.listen",
        "web.allow_remote = true",
    )


def host_name(value: str, key: str) -> str:
    """A name or address a `Host` header may carry (`dash.example.com`, `[::1]`), no port."""
    if not _HOST.match(value):
        raise ConfigError(f"{key}: {value!r} is not a host name like dash.example.com")
    return value


def checked(settings: WebSettings, key: str, how: str) -> WebSettings:
    """`settings`, or a ConfigError when they reach beyond this machine unasked."""
    if not settings.loopback and not settings.allow_remote:
        raise ConfigError(
            f"{key}: {settings.address} is not a loopback address and the dashboard has no "
            f"login; to serve it to other machines anyway, say so with {how}"
        )
    return settings
