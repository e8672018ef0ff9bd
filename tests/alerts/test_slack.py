"""The Slack channel through the real requests/urllib3 stack: `responses` at the transport for
the webhook's answers, a closed loopback port for a channel that is down."""

from __future__ import annotations

import copy
import json
import logging
import socket
import threading
from traceback import format_exception

import pytest
import responses
from urllib3 import HTTPResponse

from alerts.notify import AlertEvent, ChannelError
from alerts.slack import SlackNotifier
from collectors.http import make_session
from tests.alerts.support import T0, Bench, offer, rules

URL = "https://hooks.slack.com/services/T0001SECRET/B0002SECRET/s3cr3tW3bh00kT0k3n"
SECRET = "s3cr3tW3bh00kT0k3n"


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> list[AlertEvent]:
    """A real alert, as evaluation makes it (p4d.24xlarge real spot prices, see test_evaluate),
    once per module."""
    bench = Bench(tmp_path_factory.mktemp("slack") / "prices.duckdb")
    spots = [
        offer("8.0468", kind="spot", zone="use1-az1"),
        offer("9.1506", kind="spot", zone="use1-az2"),
    ]
    bench.collect([offer("21.957642"), *spots], T0)
    rule = rules({"name": "cheap-a100-spot", "kind": "spot_price_below", "threshold": 1.10,
                  "currency": "USD", "gpu_model": "A100"})  # fmt: skip
    return bench.check(rule, T0, dry_run=True).fired


@pytest.fixture
def events(evaluated: list[AlertEvent]) -> list[AlertEvent]:
    return copy.deepcopy(evaluated)  # each test sends its own


def fast() -> SlackNotifier:
    return SlackNotifier(URL, timeout=2, max_retries=2, backoff_factor=0)


@responses.activate
def test_the_message_is_block_kit_with_the_alert_and_its_alternatives(
    events: list[AlertEvent],
) -> None:
    responses.post(URL, body="ok")
    fast().send(events)
    (call,) = responses.calls
    assert call.request.headers["Content-Type"] == "application/json"
    assert json.loads(call.request.body) == {
        "text": "1 GPU price alert: cheap-a100-spot",
        "blocks": [
            {
                "type": "header",
                "text": {"type": "plain_text", "text": "1 GPU price alert: cheap-a100-spot"},
            },
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": "*cheap-a100-spot*: spot price 1.00585 USD/GPU-h is at or under "
                    "1.10 USD/GPU-h",
                },
                "fields": [
                    {"type": "mrkdwn", "text": "*Value*\n1.00585 USD/GPU-h"},
                    {"type": "mrkdwn", "text": "*Threshold*\n1.10 USD/GPU-h"},
                    {"type": "mrkdwn", "text": "*Provider / region*\naws us-east-1 (use1-az1)"},
                    {"type": "mrkdwn", "text": "*Instance*\np4d.24xlarge, 8x A100, spot"},
                ],
            },
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": "Best alternatives:\n```"
                    "provider  region                instance      USD/GPU-h\n"
                    "aws       us-east-1 (use1-az2)  p4d.24xlarge   1.143825```",
                },
            },
            {"type": "divider"},
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": "gpu-tracker, fired 2026-11-30 06:00 UTC"}],
            },
        ],
    }


@responses.activate
def test_many_alerts_stay_within_slacks_block_limit(events: list[AlertEvent]) -> None:
    responses.post(URL, body="ok")
    many = [AlertEvent(i, f"rule-{i}", "s", T0, 1.0, 2.0, "slack", "d <b>&", {}) for i in range(30)]
    fast().send(many)
    body = json.loads(responses.calls[0].request.body)
    assert len(body["blocks"]) <= 50
    assert body["blocks"][-1]["elements"][0]["text"].endswith("+16 more: `gpu-tracker alerts list`")
    assert body["blocks"][1]["text"]["text"] == "*rule-0*: d &lt;b&gt;&amp;"  # mrkdwn escaped


@responses.activate
def test_429_with_retry_after_then_accepted(events: list[AlertEvent]) -> None:
    responses.post(URL, status=429, headers={"Retry-After": "1"}, body="rate_limited")
    responses.post(URL, body="ok")
    fast().send(events)
    assert [c.response.status_code for c in responses.calls] == [429, 200]


@responses.activate
def test_5xx_then_accepted(events: list[AlertEvent]) -> None:
    responses.post(URL, status=503, body="service unavailable")
    responses.post(URL, status=500, body="oops")
    responses.post(URL, body="ok")
    fast().send(events)
    assert len(responses.calls) == 3


@responses.activate
def test_rate_limited_past_the_retries_says_how_long_to_wait(events: list[AlertEvent]) -> None:
    responses.post(URL, status=429, headers={"Retry-After": "120"}, body="rate_limited")
    with pytest.raises(ChannelError) as caught:
        fast().send(events)
    assert caught.value.retry_after_s == 120.0
    assert str(caught.value) == "slack: HTTP 429: rate_limited"
    assert len(responses.calls) == 3  # the first try and two retries


@responses.activate
def test_a_refused_webhook_is_an_error_with_slacks_reason(events: list[AlertEvent]) -> None:
    responses.post(URL, status=404, body="no_service")
    with pytest.raises(ChannelError, match=r"^slack: HTTP 404: no_service$"):
        fast().send(events)
    assert len(responses.calls) == 1  # a 4xx other than 429 is not retried now


@responses.activate
def test_an_error_page_is_one_plain_line(events: list[AlertEvent]) -> None:
    """A proxy's HTML page with a colour escape: stored in alert_events.detail and printed, so
    one line without the escape."""
    responses.post(URL, status=403, body="<html>\n<h1>\x1b[31mForbidden\x1b[0m</h1>\r\n</html>\n")
    with pytest.raises(ChannelError) as caught:
        fast().send(events)
    assert str(caught.value) == "slack: HTTP 403: <html> <h1> Forbidden </h1> </html>"


def test_the_webhook_url_never_appears_in_errors_or_logs(
    events: list[AlertEvent], caplog: pytest.LogCaptureFixture
) -> None:
    # A real connection refused: urllib3 retries it, logging the URL's path each time, and
    # requests' exception quotes it too.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/services/T0001SECRET/B0002SECRET/{SECRET}"
    caplog.set_level(logging.DEBUG)
    # urllib3's own level too: a CLI test run before this one in the same worker leaves it at
    # ERROR (the command's quiet logging), which would hide the retries this test looks at.
    caplog.set_level(logging.DEBUG, logger="urllib3")
    with pytest.raises(ChannelError) as caught:
        SlackNotifier(url, timeout=2, max_retries=2, backoff_factor=0).send(events)
    message = str(caught.value)
    assert message.startswith("slack: ConnectionError: ") and "***" in message
    traceback = "".join(format_exception(caught.value))  # as a crash report would print it
    assert "Retrying" in caplog.text  # urllib3 did log its retries ...
    for text in (message, caplog.text, traceback):
        assert SECRET not in text and "B0002SECRET" not in text  # ... without the secret


def test_a_post_that_may_have_arrived_is_not_posted_again(events: list[AlertEvent]) -> None:
    # A real loopback server that reads each request whole, then hangs up without an answer:
    # Slack may have acted on it, so a second POST within the send could duplicate the alert.
    requests_seen: list[bytes] = []

    def serve(server: socket.socket) -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:  # closed: the test is over
                return
            with conn:
                requests_seen.append(_read_request(conn))

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        thread = threading.Thread(target=serve, args=(server,), daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{port}/services/T0001SECRET/B0002SECRET/{SECRET}"
        with pytest.raises(ChannelError) as caught:
            SlackNotifier(url, timeout=2, max_retries=2, backoff_factor=0).send(events)
        server.shutdown(socket.SHUT_RDWR)
    thread.join(timeout=5)
    assert len(requests_seen) == 1
    assert requests_seen[0].startswith(b"POST /services/") and b'"blocks"' in requests_seen[0]
    assert str(caught.value).startswith("slack: ConnectionError: ") and SECRET not in str(
        caught.value
    )


def _read_request(conn: socket.socket) -> bytes:
    """One HTTP request, headers and body (by its Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(
        line.split(b":")[1] for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    ))  # fmt: skip
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def test_no_error_after_sending_is_retried_whatever_urllib3_calls_it() -> None:
    # Found in review: a TLS error after the POST arrived counts as urllib3's "other", which
    # read=0 alone did not cover; the same message reached a test server four times.
    notifier = SlackNotifier(f"https://hooks.slack.com/services/T/B/{SECRET}", timeout=2)
    retry = notifier.session.get_adapter("https://hooks.slack.com").max_retries
    assert (retry.read, retry.other) == (0, 0)
    assert retry.connect > 0 and retry.status > 0  # not sent yet, or refused: retried
    collector_retry = make_session(max_retries=4).get_adapter("https://x").max_retries
    assert (collector_retry.read, collector_retry.other) == (4, 4)  # collectors' GETs unchanged


def test_a_long_retry_after_is_waited_out_by_the_next_run_not_within_the_send() -> None:
    first = fast().session.get_adapter(URL).max_retries
    # What the second try waits with: urllib3 derives it from the first, keeping its class.
    limited = HTTPResponse(status=429, headers={"Retry-After": "3600"})
    second = first.increment("POST", URL, response=limited)
    assert second.get_retry_after(limited) == 60
    assert second.get_retry_after(HTTPResponse(headers={"Retry-After": "2"})) == 2
