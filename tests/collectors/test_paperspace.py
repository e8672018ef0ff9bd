"""Paperspace (DigitalOcean GPU Droplets) collector: parse on authored wire-format pages of
`/v2/sizes`, fetch through the real requests stack (`responses` for request shape, pagination
and error mapping; the loopback replay server for real urllib3 retries, waits and timeouts)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import requests
import responses
from responses import matchers

from collectors import gpus
from collectors.base import ParseResult, PriceRecord, ProviderSettings
from collectors.common import FetchError, MissingCredentials, PayloadShapeError
from collectors.paperspace import collector as paperspace
from collectors.paperspace.collector import PaperspaceCollector
from tests.collectors.support import demo_of, fixtures_of, keyed, list_price, recording
from tracker.collecting.replay import Exchange, ReplayServer

# The one recording, the demo's and these tests'; the trap sizes and errors are kept apart.
DEMO = demo_of("paperspace")
FIXTURES = fixtures_of("paperspace")
URL = "https://api.digitalocean.com/v2/sizes"
TOKEN = "do-test-token"
FIRST = [matchers.query_param_matcher({"per_page": "200"})]


def recorded_pages(**json_kwargs: Any) -> dict[str, Any]:
    """The payloads fetch returns for the recording: {"page-1": ..., "page-2": ...}."""
    files = sorted(DEMO.glob("page*.json"))
    return {
        f"page-{n}": json.loads(path.read_text(), **json_kwargs) for n, path in enumerate(files, 1)
    }


def load_pages(**json_kwargs: Any) -> dict[str, Any]:
    """The recorded pages with the trap sizes of tests/fixtures/paperspace/traps.json laid over
    them (a size replaces the recorded one of its slug, or is added), `meta.total` recounted."""
    pages = recorded_pages(**json_kwargs)
    traps = json.loads((FIXTURES / "traps.json").read_text(), **json_kwargs)
    for key, added in traps.items():
        sizes = pages[key]["sizes"]
        for trap in added:
            same = [i for i, known in enumerate(sizes) if known["slug"] == trap["slug"]]
            if same:
                sizes[same[0]] = trap
            else:
                sizes.append(trap)
    total = sum(len(p["sizes"]) for p in pages.values())
    for p in pages.values():
        p["meta"]["total"] = total
    return pages


def collector(**settings: Any) -> PaperspaceCollector:
    settings.setdefault("max_retries", 2)
    settings.setdefault("credentials", {"token": TOKEN})
    return PaperspaceCollector(ProviderSettings(**settings))


def parse(payloads: dict[str, Any], observed_at: datetime, **settings: Any) -> ParseResult:
    return collector(**settings).parse(payloads, observed_at=observed_at)


def by_offer(result: ParseResult) -> dict[tuple[Any, ...], PriceRecord]:
    return keyed(result, "instance_type", "region")


def page(sizes: list[Any], next_link: str | None = None, total: int | None = None) -> Any:
    links = {"pages": {"next": next_link}} if next_link else {}
    return {
        "sizes": sizes,
        "links": links,
        "meta": {"total": len(sizes) if total is None else total},
    }


def size(**changes: Any) -> dict[str, Any]:
    """gpu-h100x1-80gb as the openapi example has it (6.74/h, 4529.30/month), in tor1."""
    item: dict[str, Any] = {
        "slug": "gpu-h100x1-80gb",
        "memory": 245760,
        "vcpus": 20,
        "disk": 720,
        "transfer": 15.0,
        "price_monthly": 4529.3,
        "price_hourly": 6.74,
        "regions": ["tor1"],
        "available": True,
        "description": "H100 GPU - 1X",
        "networking_throughput": 10000,
        "gpu_info": {"count": 1, "vram": {"amount": 80, "unit": "gib"}, "model": "nvidia_h100"},
        "disk_info": [{"type": "local", "size": {"amount": 720, "unit": "gib"}}],
    }
    item.update(changes)
    return item


def gpu_info(
    count: Any = 1, amount: Any = 80, unit: Any = "gib", model: Any = "nvidia_h100"
) -> Any:
    return {"count": count, "vram": {"amount": amount, "unit": unit}, "model": model}


def do_record(**fields: Any) -> PriceRecord:
    return list_price("paperspace", **{"price_kind": "on_demand", "available": True, **fields})


# ---------------------------------------------------------------------------------------------
# parse: the fixture pages


def test_records_in_full(observed_at: datetime) -> None:
    offers = by_offer(parse(load_pages(), observed_at))
    # price_hourly 23.92 as given (17796.48 / 730 would be 24.378737); vram 640 GiB is the
    # total of 8 GPUs: 80 GiB each; memory 1966080 MiB / 1024 = 1920 GiB
    assert offers["gpu-h100x8-640gb", "nyc2"] == do_record(
        region="nyc2",
        instance_type="gpu-h100x8-640gb",
        price_per_hour=Decimal("23.920000"),
        gpu_model="H100",
        gpu_count=8,
        gpu_memory_gib=80,
        vcpus=160,
        memory_gib=1920,
    )
    # 6.74 (price_monthly 4529.30 is about 672 hours of it); 245760 MiB = 240 GiB
    assert offers["gpu-h100x1-80gb", "tor1"] == do_record(
        region="tor1",
        instance_type="gpu-h100x1-80gb",
        price_per_hour=Decimal("6.740000"),
        gpu_model="H100",
        gpu_count=1,
        gpu_memory_gib=80,
        vcpus=20,
        memory_gib=240,
    )
    # 1536 GiB / 8 = 192 GiB per MI300X; 15.92 / 8 = 1.99 per GPU-hour
    assert offers["gpu-mi300x8-1536gb", "atl1"] == do_record(
        region="atl1",
        instance_type="gpu-mi300x8-1536gb",
        price_per_hour=Decimal("15.920000"),
        gpu_model="MI300X",
        gpu_count=8,
        gpu_memory_gib=192,
        vcpus=160,
        memory_gib=1920,
    )
    # 32768 MiB = 32 GiB
    assert offers["gpu-4000adax1-20gb", "atl1"] == do_record(
        region="atl1",
        instance_type="gpu-4000adax1-20gb",
        price_per_hour=Decimal("0.760000"),
        gpu_model="RTX4000Ada",
        gpu_count=1,
        gpu_memory_gib=20,
        vcpus=8,
        memory_gib=32,
    )
    # available: false is stored as such; 1128 GiB / 8 = 141 GiB per H200
    assert offers["gpu-h200x8-1128gb", "atl1"] == do_record(
        region="atl1",
        instance_type="gpu-h200x8-1128gb",
        price_per_hour=Decimal("27.520000"),
        gpu_model="H200",
        gpu_count=8,
        gpu_memory_gib=141,
        vcpus=192,
        memory_gib=1920,
        available=False,
    )


def test_every_offer_and_price(observed_at: datetime) -> None:
    result = parse(load_pages(), observed_at)
    prices = {key: (r.price_per_hour, r.available) for key, r in by_offer(result).items()}
    assert prices == {
        ("gpu-h100x1-80gb", "nyc2"): (Decimal("6.74"), True),
        ("gpu-h100x1-80gb", "tor1"): (Decimal("6.74"), True),
        ("gpu-h100x8-640gb", "nyc2"): (Decimal("23.92"), True),
        ("gpu-h100x8-640gb", "tor1"): (Decimal("23.92"), True),
        ("gpu-mi300x8-1536gb", "atl1"): (Decimal("15.92"), True),
        ("gpu-4000adax1-20gb", "tor1"): (Decimal("0.76"), True),
        ("gpu-4000adax1-20gb", "atl1"): (Decimal("0.76"), True),
        ("gpu-6000adax1-48gb", "tor1"): (Decimal("1.57"), True),
        ("gpu-h200x8-1128gb", "atl1"): (Decimal("27.52"), False),
        ("gpu-mi300x1-192gb", "atl1"): (Decimal("1.99"), True),
        ("gpu-l40sx1-48gb", None): (Decimal("1.57"), False),  # regions: [], kept sold out
        ("gpu-mi350x8-2304gb", "atl1"): (Decimal("19.92"), True),  # gpu_model NULL
        ("gpu-h200x1-141gb", "atl1"): (Decimal("3.44"), True),  # vram in "gb": the table's
    }
    assert {r.price_per_hour.as_tuple().exponent for r in result.records} == {-6}
    assert {(r.currency, r.price_kind, r.zone) for r in result.records} == {
        ("USD", "on_demand", None)
    }
    assert result.unknown_instance_types == set()
    assert result.skipped_rows == 2  # the "-spot" size and the null price
    # gpu_info's facts, but the table's for the size whose vram is not in GiB
    assert result.facts == {
        **dict.fromkeys({r.instance_type for r in result.records}, "api"),
        "gpu-h200x1-141gb": "table",
    }
    assert result.gpu_summary().without_facts == ["gpu-mi350x8-2304gb"]


def test_hourly_price_is_never_derived_from_the_monthly_one(observed_at: datetime) -> None:
    # The trap: DigitalOcean's months are 672 h for one size (4529.3 / 6.74) and 744 h for
    # another (17796.48 / 23.92), so monthly / 730 would be wrong for both.
    prices = {
        slug: r.price_per_hour
        for (slug, _), r in by_offer(parse(load_pages(), observed_at)).items()
    }
    assert prices["gpu-h100x1-80gb"] == Decimal("6.740000")  # not 4529.3 / 730 = 6.204521
    assert prices["gpu-h100x8-640gb"] == Decimal("23.920000")  # not 17796.48 / 730 = 24.378740


def test_skips_and_unknowns_are_logged_with_the_provider_name(
    observed_at: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="collectors.paperspace"):
        parse(load_pages(), observed_at)
    assert [r.getMessage() for r in caplog.records] == [
        "paperspace: page-1 size 6 skipped: gpu-h100x1-80gb-spot: an undocumented spot size, "
        "not stored as on-demand",
        "paperspace: gpu-h200x1-141gb: gpu_info.vram is {'amount': 141, 'unit': 'gb'}; "
        "the GPU table's entry is stored",
        "paperspace: gpu-mi350x8-2304gb: GPU model 'amd_mi350x' is not in the GPU table; "
        "stored under its own name",
        "paperspace: page-2 size 7 skipped: gpu-l40sx8-384gb: price_hourly is None",
    ]


def test_a_size_in_no_region_keeps_its_list_price(observed_at: datetime) -> None:
    """`regions: []`, `available: false`: one record, region NULL, available false."""
    result = parse(load_pages(), observed_at)
    # 1.57 as given; 48 GiB / 1 GPU; memory 65536 MiB / 1024 = 64 GiB
    assert by_offer(result)["gpu-l40sx1-48gb", None] == do_record(
        region=None,
        instance_type="gpu-l40sx1-48gb",
        price_per_hour=Decimal("1.570000"),
        gpu_model="L40S",
        gpu_count=1,
        gpu_memory_gib=48,
        vcpus=8,
        memory_gib=64,
        available=False,
    )
    assert result.sold_out == set()


def test_sizes_offered_nowhere_asked_are_reported_as_sold_out(observed_at: datetime) -> None:
    # With regions configured, a size sold only elsewhere makes no record (an answer where no
    # GPU size is sold anywhere asked closes the history instead of failing the run as an empty
    # answer would); a size that lists no region at all keeps its list price in no region, as
    # without regions: the store looks for it in every collection.
    result = parse(load_pages(), observed_at, regions=("nyc2",))
    assert "gpu-mi300x1-192gb" in result.sold_out and "gpu-l40sx1-48gb" not in result.sold_out
    nowhere = by_offer(result)["gpu-l40sx1-48gb", None]
    assert (nowhere.available, nowhere.price_per_hour) == (False, Decimal("1.570000"))


def test_an_unknown_model_with_a_known_count_is_stored_under_its_name(
    observed_at: datetime,
) -> None:
    # 2304 GiB / 8 = 288 GiB per GPU; 19.92 as given; the model as DigitalOcean names it
    record = by_offer(parse(load_pages(), observed_at))["gpu-mi350x8-2304gb", "atl1"]
    assert (record.gpu_model, record.gpu_count, record.gpu_memory_gib) == ("amd_mi350x", 8, 288)
    assert record.price_per_hour == Decimal("19.920000")


@pytest.mark.parametrize(
    ("regions", "expected"),
    [
        (("nyc2",), {("gpu-h100x1-80gb", "nyc2"), ("gpu-h100x8-640gb", "nyc2")}),
        (("tor1", "sfo3"), {"gpu-h100x1-80gb", "gpu-h100x8-640gb", "gpu-4000adax1-20gb",
                            "gpu-6000adax1-48gb"}),
    ],
)  # fmt: skip
def test_configured_regions_restrict(
    observed_at: datetime, regions: tuple[str, ...], expected: set[Any]
) -> None:
    offers = by_offer(parse(load_pages(), observed_at, regions=regions))
    # the size that lists no region keeps its list price whatever regions are asked
    assert offers.pop(("gpu-l40sx1-48gb", None)).available is False
    if all(isinstance(e, tuple) for e in expected):
        assert set(offers) == expected
    else:
        assert {t for t, _ in offers} == expected and {r for _, r in offers} == {"tor1"}


def test_decimal_and_float_json_give_the_same_records(observed_at: datetime) -> None:
    as_floats = parse(load_pages(), observed_at)
    as_decimals = parse(load_pages(parse_float=Decimal), observed_at)
    assert as_decimals.records == as_floats.records


def test_pages_are_read_in_page_number_order(observed_at: datetime) -> None:
    many = {f"page-{n}": page([size(price_hourly=float(n))]) for n in (10, 9, 2, 1)}
    result = parse(many, observed_at)
    [kept] = result.records
    assert kept.price_per_hour == Decimal("1")  # page-1 first; the later copies are repeats
    assert result.skipped_rows == 3


# ---------------------------------------------------------------------------------------------
# parse: single sizes


def one(observed_at: datetime, item: Any, **settings: Any) -> ParseResult:
    return parse({"page-1": page([item])}, observed_at, **settings)


def test_monthly_price_plays_no_part(observed_at: datetime) -> None:
    [record] = one(observed_at, size(price_hourly=1.0, price_monthly=5000.0)).records
    assert record.price_per_hour == Decimal("1")


@pytest.mark.parametrize(
    "item",
    [
        "not an object",
        size(slug=""),
        size(slug="gpu-h100x1-80gb-spot"),
        size(gpu_info={"count": 0, "vram": {"amount": 80, "unit": "gib"}, "model": "nvidia_h100"}),
        size(gpu_info=gpu_info(count="1")),
        size(gpu_info=[1]),
        size(price_hourly=0),
        size(price_hourly=-6.74),
        size(price_hourly=None),
        size(price_hourly="6.74"),
        size(regions="tor1"),
        size(regions=[None]),
        size(available="yes"),
    ],
)
def test_sizes_not_understood_are_skipped(observed_at: datetime, item: Any) -> None:
    result = parse({"page-1": page([size(regions=["nyc2"]), item])}, observed_at)
    assert [(r.instance_type, r.region) for r in result.records] == [("gpu-h100x1-80gb", "nyc2")]
    assert result.skipped_rows == 1
    assert result.unknown_instance_types == set()


@pytest.mark.parametrize(
    ("info", "facts", "source"),
    [
        (gpu_info(model="nvidia_b300"), ("H100", 1, 80), "table"),  # the table's model
        (gpu_info(model=None), ("H100", 1, 80), "table"),
        (gpu_info(unit="gb"), ("H100", 1, 80), "table"),  # memory not in GiB: the table's
        (gpu_info(unit=None), ("H100", 1, 80), "table"),
        (gpu_info(amount=0), ("H100", 1, 80), "table"),
        (gpu_info(amount=None), ("H100", 1, 80), "table"),
        (gpu_info(amount=160), ("H100", 1, 160), "api"),  # the table says 80 per GPU
        (gpu_info(count=2, amount=160), ("H100", 2, 80), "api"),  # the table says 1 GPU
        (gpu_info(model="nvidia_h200"), ("H200", 1, 80), "api"),  # the table says H100
        (gpu_info(model="nvidia_x9", amount=96), ("nvidia_x9", 1, 96), "api"),  # unknown
    ],
)
def test_gpu_info_over_the_table(
    observed_at: datetime, info: Any, facts: tuple[Any, ...], source: str
) -> None:
    result = one(observed_at, size(gpu_info=info))
    [record] = result.records
    assert (record.gpu_model, record.gpu_count, record.gpu_memory_gib) == facts
    assert (record.vcpus, record.memory_gib) == (20, 240)  # the host is the API's
    assert result.facts == {"gpu-h100x1-80gb": source}
    assert result.unknown_instance_types == set()


@pytest.mark.parametrize("info", [gpu_info(unit="gb"), gpu_info(amount=None)])
def test_a_size_the_table_lacks_without_memory_is_reported(
    observed_at: datetime, info: Any
) -> None:
    result = one(observed_at, size(slug="gpu-x9x1-1gb", gpu_info=info))
    assert result.records == []
    assert result.unknown_instance_types == {"gpu-x9x1-1gb"}
    assert result.skipped_rows == 0


def test_a_users_entry_is_taken_over_gpu_info(observed_at: datetime) -> None:
    entry = gpus.TypeOverride(gpu_model="H200", gpu_memory_gib=141)
    overrides = gpus.Overrides(instance_types={"gpu-h100x1-80gb": entry})
    result = one(observed_at, size(), gpus=overrides)
    [record] = result.records
    assert (record.gpu_model, record.gpu_count, record.gpu_memory_gib) == ("H200", 1, 141)
    assert result.facts == {"gpu-h100x1-80gb": "config"}


def test_a_size_not_in_the_table_is_placed_from_gpu_info(observed_at: datetime) -> None:
    item = size(slug="gpu-mi325x8-2048gb", gpu_info=gpu_info(8, 2048, model="amd_mi325x"))
    [record] = one(observed_at, item).records
    assert (record.gpu_model, record.gpu_count, record.gpu_memory_gib) == ("MI325X", 8, 256)


@pytest.mark.parametrize("info", [None, {}])
def test_cpu_sizes_are_ignored(observed_at: datetime, info: Any) -> None:
    result = one(observed_at, size(slug="s-1vcpu-1gb", gpu_info=info))
    assert (result.records, result.unknown_instance_types, result.skipped_rows) == ([], set(), 0)


def test_availability_is_the_sizes_own_flag(observed_at: datetime) -> None:
    absent = size()
    del absent["available"]
    assert [r.available for r in one(observed_at, absent).records] == [None]
    assert [r.available for r in one(observed_at, size(available=False)).records] == [False]


def test_a_region_listed_twice_is_one_record(observed_at: datetime) -> None:
    assert len(one(observed_at, size(regions=["tor1", "tor1"])).records) == 1


@pytest.mark.parametrize(
    ("payloads", "message"),
    [
        ({"sizes": page([])}, "unexpected payload key 'sizes'"),
        ({"page-1": {"id": "unauthorized"}}, "page-1: answer has no sizes list"),
        ({"page-1": page([size(price_hourly=None)])}, "none of the 1 GPU sizes could be read"),
    ],
)
def test_a_changed_shape_fails_loudly(
    observed_at: datetime, payloads: dict[str, Any], message: str
) -> None:
    with pytest.raises(PayloadShapeError, match=r"^paperspace: ") as caught:
        parse(payloads, observed_at)
    assert message in str(caught.value)


# ---------------------------------------------------------------------------------------------
# fetch through `responses`


def test_fetch_follows_every_page(rsps: responses.RequestsMock) -> None:
    pages = load_pages()
    rsps.get(URL, json=pages["page-1"], match=FIRST)
    link = pages["page-1"]["links"]["pages"]["next"]
    rsps.get(link, json=pages["page-2"])
    progress: list[tuple[int, int]] = []
    settings = ProviderSettings(credentials={"token": TOKEN})
    got = PaperspaceCollector(settings, progress=lambda *a: progress.append(a)).fetch()
    assert got == pages
    assert rsps.calls[1].request.url == link  # on our own host: followed as given
    assert {c.request.headers["Authorization"] for c in rsps.calls} == {f"Bearer {TOKEN}"}
    assert progress == [(1, 7), (2, 15)]  # 6 + 6 recorded sizes, 1 + 2 trap sizes added


def test_a_next_link_on_another_host_is_rebuilt_on_the_endpoint(
    rsps: responses.RequestsMock,
) -> None:
    mirror = "http://mirror.internal:8080/do"
    pages = load_pages()
    rsps.get(mirror + "/v2/sizes", json=pages["page-1"], match=FIRST)
    rsps.get(
        mirror + "/v2/sizes",
        json=pages["page-2"],
        match=[matchers.query_param_matcher({"page": "2", "per_page": "200"})],
    )
    assert collector(endpoint=mirror + "/").fetch() == pages
    assert [c.request.url for c in rsps.calls][1] == mirror + "/v2/sizes?page=2&per_page=200"
    assert all("digitalocean.com" not in c.request.url for c in rsps.calls)


@pytest.mark.parametrize("status", [401, 403])
def test_fetch_auth_errors_name_the_variable(rsps: responses.RequestsMock, status: int) -> None:
    rsps.get(URL, status=status, json=json.loads((FIXTURES / "error-401.json").read_text()))
    with pytest.raises(FetchError, match=rf"^paperspace: sizes page 1: HTTP {status} ") as caught:
        collector().fetch()
    assert "DIGITALOCEAN_TOKEN" in str(caught.value) and "unauthorized" in str(caught.value)
    assert len(rsps.calls) == 1


def test_fetch_without_a_token_names_the_variable() -> None:
    bare = PaperspaceCollector(ProviderSettings())
    with pytest.raises(MissingCredentials, match="set DIGITALOCEAN_TOKEN"):
        bare.check_credentials()
    with pytest.raises(MissingCredentials, match="set DIGITALOCEAN_TOKEN"):
        bare.fetch()


def test_fetch_retries_429_then_succeeds(rsps: responses.RequestsMock) -> None:
    limited = json.loads((FIXTURES / "error-429.json").read_text())
    headers = {"Retry-After": "0", "ratelimit-remaining": "0", "ratelimit-reset": "1796018400"}
    rsps.get(URL, status=429, headers=headers, json=limited)
    rsps.get(URL, json=page([size()]))
    assert collector().fetch() == {"page-1": page([size()])}


def test_fetch_fails_when_429_persists(rsps: responses.RequestsMock) -> None:
    limited = json.loads((FIXTURES / "error-429.json").read_text())
    rsps.get(URL, status=429, headers={"Retry-After": "0"}, json=limited)
    with pytest.raises(FetchError, match=r"^paperspace: sizes page 1: HTTP 429: .*too_many"):
        collector(max_retries=1).fetch()


def test_a_page_that_fails_halfway_fails_the_run(rsps: responses.RequestsMock) -> None:
    rsps.get(URL, json=page([size()], next_link=URL + "?page=2&per_page=200", total=2))
    rsps.get(URL + "?page=2&per_page=200", status=503, body="upstream unavailable")
    with pytest.raises(FetchError, match=r"^paperspace: sizes page 2: HTTP 503: upstream"):
        collector().fetch()
    assert len(rsps.calls) == 1 + 3


@pytest.mark.parametrize(
    ("body", "error", "message"),
    [
        (page([size()], total=150), FetchError, "pages hold 1 sizes but meta.total is 150"),
        ({"sizes": [], "links": {"pages": {"next": ""}}}, PayloadShapeError, "next is ''"),
        ({"sizes": [], "links": {"pages": {"next": 7}}}, PayloadShapeError, "next is 7"),
        ({"sizes": [], "links": {"pages": "last"}}, PayloadShapeError, "links.pages is 'last'"),
        ({"id": "not_found"}, PayloadShapeError, "answer has no sizes list"),
        (requests.ConnectionError("reset"), FetchError, "ConnectionError"),
    ],
)
def test_fetch_failures(
    rsps: responses.RequestsMock, body: Any, error: type[Exception], message: str
) -> None:
    if isinstance(body, Exception):
        rsps.get(URL, body=body)
    else:
        rsps.get(URL, json=body)
    with pytest.raises(error, match=r"^paperspace: ") as caught:
        collector().fetch()
    assert message in str(caught.value)


def test_fetch_gives_up_on_a_link_that_never_ends(
    rsps: responses.RequestsMock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(paperspace, "MAX_PAGES", 3)
    again = URL + "?page=2&per_page=200"
    rsps.get(URL, json=page([size()], next_link=again))
    rsps.get(again, json=page([size()], next_link=again))
    with pytest.raises(PayloadShapeError, match="more than 3 pages"):
        collector().fetch()
    assert len(rsps.calls) == 3  # the cap stops the walk, not the link's end


# ---------------------------------------------------------------------------------------------
# fetch through the real urllib3 stack (loopback replay server)


def reply(number: str | None, body: Any = None, *, status: int = 200, **kw: Any) -> Exchange:
    text = json.dumps(body) if body is not None else "busy"
    match = {"method": "GET", "path": "/v2/sizes", "query": {"page": number}}
    return Exchange(match=match, status=status, body=text.encode(), **kw)


def test_replay_fixture_fetch_then_parse(
    replay: Callable[..., ReplayServer], observed_at: datetime
) -> None:
    server = replay(DEMO)
    do = collector(endpoint=server.url, credentials={"token": "demo"})
    fetched = do.parse(do.fetch(), observed_at=observed_at)
    assert server.unmatched == []
    assert [r.query.get("page") for r in server.requests] == [None, "2"]
    assert fetched.records == parse(recorded_pages(), observed_at).records
    # the 10 of load_pages() in regions, gpu-h200x1-141gb in atl1 and gpu-l40sx1-48gb in none
    assert len(fetched.records) == 12


def test_replay_wrong_token(replay: Callable[..., ReplayServer], tmp_path: Path) -> None:
    refused = {
        "match": {"method": "GET", "path": "/v2/sizes"},
        "status": 401,
        "body_file": str(FIXTURES / "error-401.json"),
    }
    recording(tmp_path, refused)
    server = replay(DEMO, tmp_path)  # the recording answers its own token only
    with pytest.raises(FetchError, match=r"HTTP 401 \(check the token in DIGITALOCEAN_TOKEN"):
        collector(endpoint=server.url, credentials={"token": "revoked"}).fetch()


def test_replay_429_waits_for_retry_after(
    serve: Callable[..., ReplayServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    limited = {"id": "too_many_requests", "message": "API Rate limit exceeded."}
    headers = {"Retry-After": "1", "ratelimit-remaining": "0"}
    server = serve(
        reply(None, limited, status=429, headers=headers, times=1), reply(None, page([]))
    )
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)  # the wait asked for, not waited
    assert collector(endpoint=server.url).fetch() == {"page-1": page([])}
    assert slept == [1]


def test_replay_page_2_fails_halfway(serve: Callable[..., ReplayServer]) -> None:
    server = serve(
        reply(None, page([size()], next_link=URL + "?page=2&per_page=200", total=2)),
        reply("2", status=500),
    )
    with pytest.raises(FetchError, match=r"^paperspace: sizes page 2: HTTP 500: busy"):
        collector(endpoint=server.url, max_retries=1).fetch()
    assert [r.query.get("page") for r in server.requests] == [None, "2", "2"]


def test_demo_recording_replays_cleanly(
    replay: Callable[..., ReplayServer], observed_at: datetime
) -> None:
    server = replay(DEMO)
    meta = json.loads((DEMO / "demo.json").read_text())
    demo = collector(endpoint=server.url, credentials={"token": meta["env"]["DIGITALOCEAN_TOKEN"]})
    result = demo.parse(demo.fetch(), observed_at=observed_at)
    assert server.unmatched == []
    assert len(server.requests) == 2
    assert result.unknown_instance_types == set() and result.skipped_rows == 0
    assert {r.gpu_model for r in result.records} >= {"H100", "H200", "MI300X", "RTX4000Ada"}
    assert {r.available for r in result.records} == {True, False}
    assert by_offer(result)["gpu-h100x8-640gb", "tor1"].price_per_hour == Decimal("23.92")
