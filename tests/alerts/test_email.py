"""The email channel against a real SMTP server on loopback (aiosmtpd): plain with AUTH,
STARTTLS and implicit TLS with a throwaway self-signed certificate made here."""

from __future__ import annotations

import copy
import datetime as dt
import ipaddress
import ssl
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from alerts.email import EmailNotifier
from alerts.notify import AlertEvent, ChannelError
from tests.alerts.smtp_server import PASSWORD, USER, Inbox, free_port, smtp_server
from tests.alerts.support import T0, Bench, offer, rules


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, valid for an hour."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


def server_context(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    return context


def client_context(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    """Trusts the throwaway certificate only; hostname checking stays on."""
    return ssl.create_default_context(cafile=str(certificate[0]))


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> list[AlertEvent]:
    """Two real alerts, as evaluation makes them (p4d.24xlarge real prices, see test_evaluate),
    once per module."""
    bench = Bench(tmp_path_factory.mktemp("email") / "prices.duckdb")
    spots = [
        offer("8.0468", kind="spot", zone="use1-az1"),
        offer("9.1506", kind="spot", zone="use1-az2"),
    ]
    bench.collect([offer("21.957642"), *spots], T0)
    rule_set = rules(
        {"name": "cheap-a100-spot", "kind": "spot_price_below", "threshold": 1.10,
         "currency": "USD", "gpu_model": "A100"},
        {"name": "deep-spot", "kind": "spot_discount_above", "threshold": 60},
    )  # fmt: skip
    return bench.check(rule_set, T0, dry_run=True).fired


@pytest.fixture
def events(evaluated: list[AlertEvent]) -> list[AlertEvent]:
    return copy.deepcopy(evaluated)  # each test sends its own


def notifier(port: int, security: str, **options: Any) -> EmailNotifier:
    settings: dict[str, Any] = {
        "host": "127.0.0.1",
        "port": port,
        "security": security,
        "sender": "gpu-tracker@example.com",
        "recipients": ["ops@example.com", "finance@example.com"],
        "timeout": 5,
    }
    return EmailNotifier(**{**settings, **options})


def test_plain_smtp_with_auth_delivers_both_parts(events: list[AlertEvent]) -> None:
    inbox = Inbox()
    with smtp_server(inbox, auth_require_tls=False) as port:
        notifier(port, "none", username=USER, password=PASSWORD).send(events)
    ((sender, recipients, mail, login),) = inbox.mails
    assert sender == "gpu-tracker@example.com"
    assert recipients == ["ops@example.com", "finance@example.com"]
    assert login == USER
    assert mail["Subject"] == "[gpu-tracker] 2 GPU price alerts: cheap-a100-spot, deep-spot"
    assert mail["To"] == "ops@example.com, finance@example.com"
    text = mail.get_body(("plain",)).get_content().replace("\r\n", "\n")  # SMTP line ends
    assert text == (
        "cheap-a100-spot: spot price 1.00585 USD/GPU-h is at or under 1.10 USD/GPU-h\n"
        "  aws us-east-1 (use1-az1) p4d.24xlarge, 8x A100, spot\n"
        "  value 1.00585 USD/GPU-h, threshold 1.10 USD/GPU-h\n"
        "  Best alternatives:\n"
        "    provider  region                instance      USD/GPU-h\n"
        "    aws       us-east-1 (use1-az2)  p4d.24xlarge   1.143825\n"
        "\n"
        # 1 - 8.0468 / 21.957642 = 63.353078 %
        "deep-spot: spot is 63.4% under on-demand (1.00585 vs 2.744705 USD/GPU-h), "
        "at least 60%\n"
        "  aws us-east-1 (use1-az1) p4d.24xlarge, 8x A100, spot\n"
        "  value 63.4%, threshold 60%\n"
        "  Best alternatives:\n"
        "    provider  region                instance      USD/GPU-h\n"
        "    aws       us-east-1 (use1-az2)  p4d.24xlarge   1.143825\n"
    )
    html = mail.get_body(("html",)).get_content()
    assert "<h3>cheap-a100-spot</h3>" in html and "<h3>deep-spot</h3>" in html
    assert "<tr><th align='left'>Threshold</th><td>1.10 USD/GPU-h</td></tr>" in html
    assert "aws       us-east-1 (use1-az2)  p4d.24xlarge   1.143825" in html


def test_a_large_batch_lists_the_first_hundred(events: list[AlertEvent]) -> None:
    many = [
        AlertEvent(i, f"rule-{i}", "s", T0, 1.0, 2.0, "email", f"detail {i}") for i in range(150)
    ]
    inbox = Inbox()
    with smtp_server(inbox, auth_require_tls=False) as port:
        notifier(port, "none").send(many)
    ((_, _, mail, _),) = inbox.mails
    text = mail.get_body(("plain",)).get_content()
    assert "rule-99: detail 99" in text and "rule-100" not in text
    assert text.rstrip().endswith("+50 more: gpu-tracker alerts list")
    assert mail["Subject"].startswith("[gpu-tracker] 150 GPU price alerts: rule-0, rule-1")


def test_starttls_with_auth(events: list[AlertEvent], certificate: tuple[Path, Path]) -> None:
    inbox = Inbox()
    tls = server_context(certificate)
    with smtp_server(inbox, tls_context=tls, require_starttls=True) as port:
        ssl_context = client_context(certificate)
        notifier(port, "starttls", username=USER, password=PASSWORD, ssl_context=ssl_context).send(
            events
        )
    assert [login for _, _, _, login in inbox.mails] == [USER]


def test_starttls_refuses_an_untrusted_certificate(
    events: list[AlertEvent], certificate: tuple[Path, Path]
) -> None:
    inbox = Inbox()
    tls = server_context(certificate)
    with (
        smtp_server(inbox, tls_context=tls, require_starttls=True) as port,
        pytest.raises(ChannelError, match="CERTIFICATE_VERIFY_FAILED"),
    ):
        notifier(port, "starttls", username=USER, password=PASSWORD).send(events)
    assert inbox.mails == []


def test_implicit_tls(events: list[AlertEvent], certificate: tuple[Path, Path]) -> None:
    inbox = Inbox()
    # aiosmtpd offers AUTH only after its own STARTTLS unless told the session is safe: it is,
    # the whole connection is TLS.
    tls = server_context(certificate)
    with smtp_server(inbox, ssl_context=tls, auth_require_tls=False) as port:
        ssl_context = client_context(certificate)
        notifier(port, "ssl", username=USER, password=PASSWORD, ssl_context=ssl_context).send(
            events
        )
    assert [login for _, _, _, login in inbox.mails] == [USER]


def test_a_wrong_password_fails_without_showing_it(events: list[AlertEvent]) -> None:
    inbox = Inbox()
    wrong = "wr0ng-" + PASSWORD
    with (
        smtp_server(inbox, auth_require_tls=False) as port,
        pytest.raises(ChannelError) as caught,
    ):
        notifier(port, "none", username=USER, password=wrong).send(events)
    assert "SMTPAuthenticationError: (535" in str(caught.value)
    assert wrong not in str(caught.value) and inbox.mails == []


def test_a_server_that_is_down(events: list[AlertEvent]) -> None:
    with pytest.raises(ChannelError, match=r"^email via 127.0.0.1:\d+: ConnectionRefusedError"):
        notifier(free_port(), "none").send(events)


class QuitNot221(Inbox):
    """Takes the mail (250 after DATA), then answers QUIT with 421, as some relays do."""

    async def handle_QUIT(self, server: Any, session: Any, envelope: Any) -> str:
        return "421 4.3.0 closing, try later"


class RefusesOne(Inbox):
    """Refuses one recipient at RCPT (550) and takes the others."""

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: Any
    ) -> str:
        if address.startswith("gone@"):
            return "550 5.1.1 no such user"
        envelope.rcpt_tos.append(address)
        return "250 OK"


EMAIL_RULE = {"name": "cheap-a100-spot", "kind": "spot_price_below", "threshold": 1.10,
              "currency": "USD", "channels": ["email"]}  # fmt: skip
EMAIL = {"smtp_host": "127.0.0.1", "from": "a@example.com", "to": "b@example.com"}


def alert_bench(tmp_path: Path) -> Bench:
    bench = Bench(tmp_path / "run.duckdb")
    bench.collect([offer("21.957642"), offer("8.0468", kind="spot", zone="use1-az1")], T0)
    return bench


def test_a_mail_taken_is_sent_whatever_the_server_answers_to_quit(tmp_path: Path) -> None:
    bench, inbox = alert_bench(tmp_path), QuitNot221()
    rule_set = rules(EMAIL_RULE, email=EMAIL)
    with smtp_server(inbox, auth_require_tls=False) as port:
        channel = {"email": notifier(port, "none")}
        first = bench.check(rule_set, T0, channel)
        bench.check(rule_set, T0 + dt.timedelta(hours=1), channel)
    assert first.ok and len(inbox.mails) == 1
    assert bench.sql("SELECT status, attempts FROM alert_events") == [("sent", 1)]


def test_recipients_refused_one_by_one_are_logged_and_not_mailed_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bench, inbox = alert_bench(tmp_path), RefusesOne()
    rule_set = rules(EMAIL_RULE, email=EMAIL)
    to = ["ops@example.com", "gone@example.com"]
    with smtp_server(inbox, auth_require_tls=False) as port:
        channel = {"email": notifier(port, "none", recipients=to)}
        first = bench.check(rule_set, T0, channel)
        bench.check(rule_set, T0 + dt.timedelta(hours=1), channel)
    assert [recipients for _, recipients, _, _ in inbox.mails] == [["ops@example.com"]]
    assert first.ok and bench.sql("SELECT status FROM alert_events") == [("sent",)]
    (record,) = [r for r in caplog.records if r.name == "alerts"]
    assert record.levelname == "WARNING" and record.getMessage() == (
        f"alerts: email via 127.0.0.1:{port}: 1 of 2 recipients refused the mail, not retried: "
        "gone@example.com (550 5.1.1 no such user)"
    )


def test_a_login_without_tls_warns_that_the_password_goes_in_clear(
    events: list[AlertEvent], caplog: pytest.LogCaptureFixture
) -> None:
    with smtp_server(Inbox(), auth_require_tls=False) as port:
        notifier(port, "none").send(events)  # no login: nothing to warn about
        assert [r for r in caplog.records if r.name == "alerts"] == []
        notifier(port, "none", username=USER, password=PASSWORD).send(events)
    (record,) = [r for r in caplog.records if r.name == "alerts"]
    assert record.levelname == "WARNING" and "password goes over the network in clear" in (
        record.getMessage()
    )
    assert PASSWORD not in caplog.text
