"""Email: one message per batch through SMTP (STARTTLS, implicit TLS or plain), with a
plain-text part and an HTML part saying the same. A review's HTML part can carry pictures
(charts) inline, drawn from its digest by a function the notifier is given: the plain part
says everything without them, and a picture that cannot be drawn is left out, not a failed send.

The password never leaves `smtplib.login`: SMTP errors quote the server's reply, never what the
client sent, and every error text is redacted anyway before it is raised. Once the server has
taken the mail it counts as sent, even for recipients it refused one by one (logged): a retry
would mail the others again.
"""

from __future__ import annotations

import html
import logging
import smtplib
import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any

from alerts import digest
from alerts.digest_render import html_body
from alerts.message import alternatives_table, plain_text, subject_line
from alerts.notify import AlertEvent, ChannelError, Redactor

log = logging.getLogger("alerts")
_SUBJECT_PREFIX = "[gpu-tracker] "
# The first run of broad rules can fire thousands of alerts at once: the mail lists this many
# and points to `gpu-tracker alerts list` for the rest (all of them count as delivered).
MAX_ALERTS_SHOWN = 100
_FIELDS = (("offer", "Offer"), ("value_text", "Value"), ("threshold_text", "Threshold"))


@dataclass(frozen=True)
class Image:
    """A PNG shown inline in a review's HTML part; `alt` stands in for it where images are off."""

    filename: str
    png: bytes
    alt: str


# Draws a review's pictures from its digest (the facts stored with its events), so a retry
# shows what was true when the review was made.
ReviewImages = Callable[[Mapping[str, Any]], Sequence[Image]]


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
        review_images: ReviewImages | None = None,
    ) -> None:
        self.host, self.port, self.security = host, port, security
        self.sender, self.recipients = sender, tuple(recipients)
        self._username, self._password = username, password
        self.timeout = timeout
        self.ssl_context = ssl_context or ssl.create_default_context()
        self._redact = Redactor(password, username)  # a server may quote the user back
        self._review_images = review_images

    def send(self, events: Sequence[AlertEvent]) -> None:
        images = self._images(events)
        mail = message(events, sender=self.sender, recipients=self.recipients, images=images)
        try:
            smtp = self._connect()
            try:
                refused = self._submit(smtp, mail)
            finally:
                _close(smtp)
        except (smtplib.SMTPException, OSError) as exc:
            text = self._redact(f"{type(exc).__name__}: {exc}")
            raise ChannelError(f"email via {self.host}:{self.port}: {text}") from None
        if refused:
            # Sent all the same: the others have it, and a retry would send it to them twice.
            # Addresses are no secret; the server's replies say why.
            log.warning(
                "alerts: email via %s:%d: %d of %d recipients refused the mail, not retried: %s",
                self.host,
                self.port,
                len(refused),
                len(self.recipients),
                "; ".join(f"{to} ({_reply(reply)})" for to, reply in sorted(refused.items())),
            )

    def _images(self, events: Sequence[AlertEvent]) -> Sequence[Image]:
        if self._review_images is None or not digest.is_review(events):
            return ()
        try:
            return self._review_images(events[0].facts)
        except Exception as exc:  # a chart is a courtesy: the plain part says it all
            log.warning("alerts: email: the review's chart could not be drawn, sent without it: "
                        "%s: %s", type(exc).__name__, exc)  # fmt: skip
            return ()

    def _submit(self, smtp: smtplib.SMTP, mail: EmailMessage) -> dict[str, tuple[int, bytes]]:
        """Send `mail` on an open connection; the recipients the server refused one by one."""
        if self.security == "starttls":
            smtp.starttls(context=self.ssl_context)
        if self._username:
            if self.security == "none":
                log.warning(
                    'alerts: email via %s:%d: security = "none": the SMTP password goes over '
                    "the network in clear",
                    self.host,
                    self.port,
                )
            smtp.login(self._username, self._password or "")
        return smtp.send_message(mail)

    def _connect(self) -> smtplib.SMTP:
        if self.security == "ssl":
            return smtplib.SMTP_SSL(
                self.host, self.port, timeout=self.timeout, context=self.ssl_context
            )
        return smtplib.SMTP(self.host, self.port, timeout=self.timeout)


def _close(smtp: smtplib.SMTP) -> None:
    # Once send_message has returned the server has the mail: a QUIT answered with anything but
    # 221 (or a connection dropped before it) must not make it a failed send, retried and so
    # mailed twice. smtplib's context manager would raise there.
    try:
        smtp.quit()
    except (smtplib.SMTPException, OSError):
        pass
    finally:
        smtp.close()


def _reply(reply: tuple[int, bytes]) -> str:
    code, text = reply
    return f"{code} {text.decode(errors='replace')}"


def message(
    events: Sequence[AlertEvent],
    *,
    sender: str,
    recipients: Sequence[str],
    images: Sequence[Image] = (),
) -> EmailMessage:
    """The mail: subject naming the rules, a plain-text body and the same as HTML (a review:
    its digest, with `images` inline in the HTML part: multipart/related, `cid:` references)."""
    mail = EmailMessage()
    review = digest.is_review(events)
    subject = digest.title(events[0].facts) if review else subject_line(events)
    mail["Subject"] = _SUBJECT_PREFIX + subject
    mail["From"] = sender
    mail["To"] = ", ".join(recipients)
    mail["Date"] = formatdate(localtime=False)
    mail["Message-ID"] = make_msgid(domain=_domain(sender))
    if review:
        mail.set_content(digest.plain_text(events[0].facts))
        cids = [make_msgid("chart", domain=_domain(sender)) for _ in images]
        pictures = [(cid[1:-1], image.alt) for cid, image in zip(cids, images, strict=True)]
        mail.add_alternative(html_body(events[0].facts, pictures), subtype="html")
        _attach_related(mail, cids, images)
        return mail
    shown, more = events[:MAX_ALERTS_SHOWN], len(events) - MAX_ALERTS_SHOWN
    rest = f"+{more} more: gpu-tracker alerts list\n" if more > 0 else ""
    mail.set_content(plain_text(shown) + (f"\n{rest}" if rest else ""))
    mail.add_alternative(_html(events, shown, rest), subtype="html")
    return mail


def _domain(sender: str) -> str | None:
    return sender.rpartition("@")[2] or None


def _attach_related(mail: EmailMessage, cids: Sequence[str], images: Sequence[Image]) -> None:
    """The images beside the HTML part that names them (it becomes multipart/related)."""
    html_part = mail.get_body(("html",))
    if html_part is None or not images:
        return
    for cid, image in zip(cids, images, strict=True):
        html_part.add_related(image.png, "image", "png", cid=cid, filename=image.filename,
                              disposition="inline")  # fmt: skip


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
