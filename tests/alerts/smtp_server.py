"""A real SMTP server on loopback for the tests (aiosmtpd), recording what it receives."""

from __future__ import annotations

import email
import email.policy
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

USER, PASSWORD = "alerts@example.com", "pa55-w0rd-Secret"


@dataclass
class Inbox:
    """What the server received: one entry per message, with who logged in."""

    mails: list[tuple[str, list[str], EmailMessage, str | None]] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        mail = email.message_from_bytes(envelope.content, policy=email.policy.default)
        login = session.auth_data.login.decode() if session.authenticated else None
        self.mails.append((envelope.mail_from, list(envelope.rcpt_tos), mail, login))
        return "250 OK"


def authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
    ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
        USER.encode(),
        PASSWORD.encode(),
    )
    # handled=False: the server answers 535 itself on a failure.
    return AuthResult(success=ok, handled=False, auth_data=data if ok else None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def smtp_server(inbox: Inbox, **options: Any) -> Iterator[int]:
    port = free_port()
    controller = Controller(
        inbox, hostname="127.0.0.1", port=port, authenticator=authenticate, **options
    )
    controller.start()
    try:
        yield port
    finally:
        controller.stop()
