"""Email: one message per batch through SMTP (STARTTLS, implicit TLS or plain), with a
plain-text part and an HTML part saying the same.

The password never leaves `smtplib.login`: SMTP errors quote the server's reply, never what the
client sent, and every error text is redacted anyway before it is raised.
"""

from __future__ import annotations

import html
import smtplib
import ssl
from collections.abc import Sequence
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from alerts.message import alternatives_table, plain_text, subject_line
from alerts.notify import AlertEvent, ChannelError, Redactor

_SUBJECT_PREFIX = "[gpu-tracker] "
# The first run of broad rules can fire thousands of alerts at once: the mail lists this many
# and points to `gpu-tracker alerts list` for the rest (all of them count as delivered).
MAX_ALERTS_SHOWN = 100
_FIELDS = (("offer", "Offer"), ("value_text", "Value"), ("threshold_text", "Threshold"))


class EmailNotifier:
    name = "email"

    def __init__(
        self,
        *,
        host: str,
        port: int,
        security: str,
        sender: str,
        recipients: Sequence[str],
        username: str | None = None,
        password: str | None = None,
        timeout: float = 30.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.host, self.port, self.security = host, port, security
        self.sender, self.recipients = sender, tuple(recipients)
        self._username, self._password = username, password
        self.timeout = timeout
        self.ssl_context = ssl_context or ssl.create_default_context()
        self._redact = Redactor(password)

    def send(self, events: Sequence[AlertEvent]) -> None:
        mail = message(events, sender=self.sender, recipients=self.recipients)
        try:
            with self._connect() as smtp:
                if self.security == "starttls":
                    smtp.starttls(context=self.ssl_context)
                if self._username:
                    smtp.login(self._username, self._password or "")
                smtp.send_message(mail)
        except (smtplib.SMTPException, OSError) as exc:
            text = self._redact(f"{type(exc).__name__}: {exc}")
            raise ChannelError(f"email via {self.host}:{self.port}: {text}") from None

    def _connect(self) -> smtplib.SMTP:
        if self.security == "ssl":
            return smtplib.SMTP_SSL(
                self.host, self.port, timeout=self.timeout, context=self.ssl_context
            )
        return smtplib.SMTP(self.host, self.port, timeout=self.timeout)


def message(
    events: Sequence[AlertEvent], *, sender: str, recipients: Sequence[str]
) -> EmailMessage:
    """The mail: subject naming the rules, a plain-text body and the same as HTML."""
    mail = EmailMessage()
    mail["Subject"] = _SUBJECT_PREFIX + subject_line(events)
    mail["From"] = sender
    mail["To"] = ", ".join(recipients)
    mail["Date"] = formatdate(localtime=False)
    mail["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or None)
    shown, more = events[:MAX_ALERTS_SHOWN], len(events) - MAX_ALERTS_SHOWN
    rest = f"+{more} more: gpu-tracker alerts list\n" if more > 0 else ""
    mail.set_content(plain_text(shown) + (f"\n{rest}" if rest else ""))
    mail.add_alternative(_html(events, shown, rest), subtype="html")
    return mail


def _html(events: Sequence[AlertEvent], shown: Sequence[AlertEvent], rest: str) -> str:
    parts = [f"<h2>{html.escape(subject_line(events))}</h2>"]
    for event in shown:
        f = event.facts
        parts.append(
            f"<h3>{html.escape(event.rule)}</h3>"
            f"<p>{html.escape(f.get('headline') or event.detail)}</p>"
        )
        rows = [(label, f[key]) for key, label in _FIELDS if f.get(key)]
        if rows:
            parts.append(
                "<table>"
                + "".join(
                    f"<tr><th align='left'>{label}</th><td>{html.escape(str(v))}</td></tr>"
                    for label, v in rows
                )
                + "</table>"
            )
        table = alternatives_table(f)
        if table:
            parts.append(
                "<p>Best alternatives:</p><pre>" + html.escape("\n".join(table)) + "</pre>"
            )
    if rest:
        parts.append(f"<p>{html.escape(rest)}</p>")
    body = "\n".join(parts)
    style = "font-family: sans-serif"
    return f"<!DOCTYPE html>\n<html><body style='{style}'>\n{body}\n</body></html>\n"
