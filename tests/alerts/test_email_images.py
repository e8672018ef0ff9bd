"""A review email with a picture inline, against the real SMTP server on loopback: the HTML part
and the PNG travel together (multipart/related, a `cid:` reference), the plain part says it all
without them, a picture that cannot be drawn leaves the mail whole, and alerts carry none."""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from alerts import digest
from alerts.email import EmailNotifier, Image
from alerts.notify import AlertEvent
from tests.alerts.smtp_server import Inbox, smtp_server
from tests.alerts.support import T0, Bench, offer
from tracker.charts import base
from tracker.config.daemon import Since
from tracker.review.build import build

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png() -> bytes:
    """A real chart in the house style, drawn with matplotlib."""
    fig, ax = base.figure("test chart", "USD")
    ax.bar(["then", "now"], [2.0, 1.5])
    return base.png_bytes(fig)


@pytest.fixture(scope="module")
def picture() -> bytes:
    return png()


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    bench = Bench(tmp_path_factory.mktemp("images") / "prices.duckdb")
    bench.collect([offer("21.957642"), offer("8.0468", kind="spot", zone="use1-az1")], T0,
                  regions=None)  # fmt: skip
    return build(bench.path, T0, Since(6, "mo")).to_dict()


@pytest.fixture
def facts(reviewed: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(reviewed)  # a review's facts, once per module; each test its own


def send(events: Sequence[AlertEvent], images: Any) -> Any:
    inbox = Inbox()
    with smtp_server(inbox) as port:
        notifier = EmailNotifier(host="127.0.0.1", port=port, security="none",
                                 sender="gpu@example.com", recipients=["ops@example.com"],
                                 review_images=images)  # fmt: skip
        notifier.send(events)
    ((_, _, mail, _),) = inbox.mails
    return mail


def review_event(facts: dict[str, Any]) -> AlertEvent:
    return AlertEvent(1, digest.RULE, facts["period"], T0, None, None, "email", "d", facts)


def test_the_review_chart_travels_inline_beside_the_html(
    facts: dict[str, Any], picture: bytes
) -> None:
    asked: list[Mapping[str, Any]] = []

    def images(given: Mapping[str, Any]) -> list[Image]:
        asked.append(given)
        return [Image("review.png", picture, "3-year cost per GPU model, then and now")]

    mail = send([review_event(facts)], images)
    assert asked == [facts]  # drawn from the digest stored with the event
    assert mail.get_content_type() == "multipart/alternative"
    plain, related = mail.iter_parts()
    assert plain.get_content_type() == "text/plain"
    assert related.get_content_type() == "multipart/related"
    html_part, image = related.iter_parts()
    assert html_part.get_content_type() == "text/html"
    assert image.get_content_type() == "image/png"
    data = image.get_content()
    assert data == picture and data.startswith(PNG_SIGNATURE)
    assert image.get_filename() == "review.png"
    cid = image["Content-ID"].strip("<>")
    html = html_part.get_content()
    assert f"<img src='cid:{cid}' alt='3-year cost per GPU model, then and now'" in html
    # The plain part is the whole digest, figures included.
    text = plain.get_content().replace("\r\n", "\n")
    assert text == digest.plain_text(facts)
    assert "2.744705" in text  # 21.957642 / 8 per GPU-hour


def test_a_chart_that_cannot_be_drawn_leaves_the_mail_whole(
    facts: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    def broken(given: Mapping[str, Any]) -> list[Image]:
        raise ValueError("no data to draw")

    with caplog.at_level(logging.WARNING, logger="alerts"):
        mail = send([review_event(facts)], broken)
    assert [p.get_content_type() for p in mail.iter_parts()] == ["text/plain", "text/html"]
    assert "chart could not be drawn, sent without it: ValueError: no data to draw" in caplog.text


def test_alerts_carry_no_picture(facts: dict[str, Any], picture: bytes) -> None:
    def images(given: Mapping[str, Any]) -> list[Image]:
        raise AssertionError("only a review is drawn")

    alert = AlertEvent(2, "cheap", "aws p4d", T0, 1.0, 2.0, "email", "cheap: 1.00", {})
    mail = send([alert], images)
    assert [p.get_content_type() for p in mail.iter_parts()] == ["text/plain", "text/html"]


def test_without_pictures_the_review_mail_is_as_before(facts: dict[str, Any]) -> None:
    mail = send([review_event(facts)], None)
    assert [p.get_content_type() for p in mail.iter_parts()] == ["text/plain", "text/html"]
    assert "<img" not in mail.get_body(("html",)).get_content()
