"""The `Host` names the dashboard answers to (docs/web.md, "Security").

A page on the internet can point a name of its own at 127.0.0.1 (DNS rebinding) and then read
a dashboard that has no login as if it were its own site: the browser still sends that name
in `Host`. Answering only the names this machine is reached by defeats it. Loopback names are
always admitted; `--allow-remote` (`[web] allow_remote`) adds the listen address and this
machine's names, `--allow-remote NAME` and `[web] allowed_hosts` the names given. An address
(an IP, not a name) cannot be rebound, so with `allow_remote` any address is admitted.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True)
class Hosts:
    """The admitted names (lower case, no port); `addresses`: any IP literal too."""

    names: frozenset[str]
    addresses: bool = False

    def admits(self, header: str | None) -> bool:
        """Whether a request with this `Host` header is answered; None (an HTTP/1.0 client
        that sent none) names nothing a page could have rebound, so it is."""
        if header is None:
            return True
        name = host_name(header)
        if name is None:
            return False
        return name in self.names or (self.addresses and _is_address(name))


def allowed(listen_host: str | None, *, allow_remote: bool, extra: tuple[str, ...] = ()) -> Hosts:
    """The names a server listening on `listen_host` answers to."""
    names = set(LOOPBACK) | {_plain(name) for name in extra if name}
    if allow_remote:
        if listen_host and not _unspecified(listen_host):
            names.add(_plain(listen_host))
        for name in (socket.gethostname(), socket.getfqdn()):
            if name:
                names.add(_plain(name))
    return Hosts(frozenset(names), addresses=allow_remote)


def host_name(header: str) -> str | None:
    """`Example.com:8080` -> `example.com`, `[::1]:80` -> `::1`; None when it is not a host."""
    value = header.strip()
    if value.startswith("["):
        inside, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not _port(rest)):
            return None
        return _plain(inside)
    name, colon, port = value.rpartition(":")
    if not colon:
        name = value
    elif not port.isdigit():
        return None
    if not name or any(c.isspace() or c in "/@[]" for c in name):
        return None
    return _plain(name)


def _port(rest: str) -> bool:
    return rest.startswith(":") and rest[1:].isdigit()


def _plain(name: str) -> str:
    return name.strip().strip("[]").rstrip(".").lower()


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False
