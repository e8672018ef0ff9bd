"""The web dashboard in a real browser: Debian's Chromium, headless, driven by Playwright (the
Python package only; the browser is the system's), over the demo store. It checks what a person
sees: the table lists the offers, each filter (GPU, kind, provider, region, the search box,
hide sold out, hide stale) shows exactly its rows and lives in the URL (a bookmark reloads
the same table), every column sorts both ways, the table fits 1,280 px, a chart renders, the
History panel says the window it draws, and the TCO form (with migration cost, current
provider and baseline) answers with the API's own figures.

Without /usr/bin/chromium (or Playwright) these tests skip, saying why; in CI (`CI` set) they
fail instead, so a missing browser never passes for a green run. Run with `-m browser`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tracker import config as config_mod
from tracker.config.web import WebSettings
from tracker.web.server import Running, start_for

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
# Flags for a container without a display, a GPU or a network: nothing starts by itself.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _missing(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the browser tests: {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def server(demo_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    store = Path(shutil.copy(demo_store, tmp_path_factory.mktemp("browser") / "prices.duckdb"))
    config = config_mod.from_dict({"storage": {"path": str(store)}}, source=None)
    running = start_for(config, WebSettings("127.0.0.1", 0), "web.listen")
    yield running
    running.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if not CHROMIUM.exists():
        _missing(f"{CHROMIUM} is absent (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed (pip install -e '.[browser]')")
    profile = tmp_path_factory.mktemp("chromium-profile")  # a new, empty --user-data-dir
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), headless=True, args=FLAGS
        )
        yield context
        context.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    opened = browser.new_page()
    opened.set_default_timeout(30_000)  # a guard against a hang, never a wait
    yield opened
    opened.close()


def api(server: Running, path: str) -> Any:
    with urllib.request.urlopen(server.url.rstrip("/") + path, timeout=60) as answer:
        return json.loads(answer.read())


def visible_rows(page: Any) -> Any:
    return page.locator("#offers tbody tr:not([hidden])")


def test_the_table_lists_the_offers_and_filters_change_it(server: Running, page: Any) -> None:
    # The table lists sold-out offers too (marked; a filter hides them): the API's count with
    # include_sold_out is the one to match.
    page.goto(server.url)
    every = page.locator("#offers tbody tr")
    total = every.count()
    assert total > 100
    page.wait_for_function(
        f"() => document.getElementById('shown').textContent === '{total} of {total} offers shown'"
    )
    h100 = len(
        [r for r in api(server, f"/api/latest?gpu=H100&include_sold_out=true&limit={total}")]
    )
    page.select_option("select[data-filter=gpu_model]", "H100")
    page.wait_for_function(
        f"() => document.getElementById('shown').textContent === '{h100} of {total} offers shown'"
    )
    assert 0 < visible_rows(page).count() == h100 < total
    gpus = visible_rows(page).evaluate_all("rows => rows.map(r => r.cells[0].textContent)")
    assert set(gpus) == {"H100"}
    page.select_option("select[data-filter=kind]", "spot")
    spot = len(api(server, f"/api/latest?gpu=H100&kind=spot&include_sold_out=true&limit={total}"))
    page.wait_for_function(
        f"() => document.getElementById('shown').textContent.startsWith('{spot} ')"
    )
    assert visible_rows(page).count() == spot


def test_sorting_and_repricing(server: Running, page: Any) -> None:
    page.goto(server.url)
    page.select_option("select[data-filter=gpu_model]", "A100")
    price = page.locator("#offers th", has_text="price")
    price.click()
    page.wait_for_selector("#offers th[aria-sort=ascending]")
    prices = visible_rows(page).evaluate_all(
        "rows => rows.map(r => r.querySelector('td.price').dataset.sort)"
    )
    numbers = [float(p) for p in prices if p]
    assert len(numbers) > 3 and numbers == sorted(numbers)
    price.click()
    page.wait_for_selector("#offers th[aria-sort=descending]")
    first = visible_rows(page).first.locator("td.price").text_content()
    assert first == f"{max(numbers):.4f}"
    # Per instance-hour in the provider's own currency: the cell shows that figure.
    page.select_option("select[data-per]", "instance")
    page.select_option("select[data-money]", "native")
    cell = visible_rows(page).first.locator("td.price")
    page.wait_for_function(
        "el => el.textContent === Number(el.dataset.h).toFixed(4)", arg=cell.element_handle()
    )


def test_a_history_chart_renders(server: Running, page: Any) -> None:
    page.goto(server.url + "history")
    page.select_option("#history-form select[name=gpu]", "A100")
    page.fill("#history-form input[name=provider]", "aws")
    page.select_option("#history-form select[name=since]", "365d")
    page.click("#history-form button[type=submit]")
    chart = page.wait_for_selector("figure.chart svg")
    box = chart.bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 150
    assert page.locator("figure.chart svg path").count() > 5  # the axes and the step lines
    assert page.locator("#stats tbody tr").count() > 0


def test_a_chart_point_says_its_value_and_time_on_hover(server: Running, page: Any) -> None:
    page.goto(server.url + "history?gpu=A100&provider=aws&since=365d")
    point = page.locator("figure.chart svg circle.point").last  # drawn last: on top
    tip = point.locator("title").text_content()
    found = re.fullmatch(r"(.+)\n(\d{4}-\d\d-\d\d \d\d:\d\d) UTC: ([\d,.]+) (\w+) per .+", tip)
    assert found, tip
    # The value is one of the series' own prices: between its min and its max in the table.
    row = page.locator("#stats tbody tr", has_text=found[1]).first.locator("td")
    low, high = (float(row.nth(i).text_content().replace(",", "")) for i in (3, 7))
    assert low <= float(found[3].replace(",", "")) <= high
    assert row.nth(1).text_content() == found[4]
    # What the pointer is on there is the point, whose title the browser shows.
    point.hover()
    box = point.bounding_box()
    under = page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y).closest('circle')"
        "?.querySelector('title')?.textContent",
        [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
    )
    assert under == tip
    # The bars of Decide say their totals the same way.
    page.goto(server.url + "decide?gpu=A100&gpus=8&months=12")
    bar = page.locator("figure.chart svg rect.bar").first.locator("title").text_content()
    best = api(server, "/api/tco?gpu=A100&gpus=8&months=12&limit=1")[0]
    assert bar.endswith(f": {best['total_usd']:,.2f} USD")


def test_the_tco_form_answers(server: Running, page: Any) -> None:
    page.goto(server.url + "decide")
    page.select_option("#tco-form select[name=gpu]", "A100")
    page.fill("#tco-form input[name=gpus]", "16")
    page.fill("#tco-form input[name=months]", "12")
    page.click("#tco-form button[type=submit]")
    page.wait_for_selector("#tco tbody tr")
    assert page.locator("figure.chart svg").count() == 1
    best = api(server, "/api/tco?gpu=A100&gpus=16&months=12&limit=1")[0]
    first = page.locator("#tco tbody tr").first.locator("td")
    assert first.nth(3).text_content() == f"{best['total_usd']:,.2f}"
    assert first.nth(6).text_content() == "best"
    # A value the form lets through but the command refuses: refused in the command's words.
    page.fill("#tco-form input[name=gpus]", "0")
    page.click("#tco-form button[type=submit]")
    assert "--gpus" in (page.wait_for_selector(".problem").text_content() or "")


def test_the_tco_form_takes_gpus_per_node(server: Running, page: Any) -> None:
    page.goto(server.url + "decide")
    page.select_option("#tco-form select[name=gpu]", "A100")
    page.fill("#tco-form input[name=gpus]", "16")
    page.fill("#tco-form input[name=per_node]", "8")
    page.click("#tco-form button[type=submit]")
    page.wait_for_selector("#tco tbody tr")
    assert "per_node=8" in page.url  # the answer is bookmarkable
    assert page.input_value("#tco-form input[name=per_node]") == "8"
    best = api(server, "/api/tco?gpu=A100&gpus=16&per_node=8&limit=1")[0]
    assert best["gpu_count"] >= 8 and best["instances"] == 16 // best["gpu_count"]
    first = page.locator("#tco tbody tr").first.locator("td")
    assert first.nth(2).text_content() == str(best["instances"])
    assert first.nth(3).text_content() == f"{best['total_usd']:,.2f}"
    # every row of every size's table is a machine of 8 GPUs or more: 2 instances at most
    cells = page.locator("table[id^=tco] tbody tr td:nth-child(3)").all_text_contents()
    assert cells and all(int(n) <= 2 for n in cells)


def test_an_offer_links_to_its_history(server: Running, page: Any) -> None:
    page.goto(server.url)
    page.select_option("select[data-filter=gpu_model]", "A100")
    page.select_option("select[data-filter=provider]", "aws")
    link = visible_rows(page).first.locator("a")
    name = link.text_content()
    link.click()
    page.wait_for_selector("figure.chart svg")
    rows = page.locator("#stats tbody tr")
    assert rows.count() == 1 and name in (rows.first.text_content() or "")


def test_every_filter_narrows_the_table_to_its_value(server: Running, page: Any) -> None:
    page.goto(server.url)
    total = page.locator("#offers tbody tr").count()
    for key in ("gpu_model", "kind", "provider", "region"):
        select = page.locator(f"select[data-filter={key}]")
        values = select.locator("option").evaluate_all("os => os.map(o => o.value)")
        value = values[len(values) // 2]  # one from the middle: not "any"
        assert value
        select.select_option(value)
        found = visible_rows(page).evaluate_all(f"rs => rs.map(r => r.dataset.f{_camel(key)})")
        assert found and set(found) == {value}, key
        expected = page.locator(f'#offers tbody tr[data-f-{key}="{value}"]')
        assert len(found) == expected.count() < total, key
        select.select_option("")
        assert visible_rows(page).count() == total
    # The search box: every shown row contains the text, every row containing it is shown.
    page.fill("input[data-search]", "p4d.24xlarge")
    texts = visible_rows(page).evaluate_all("rs => rs.map(r => r.textContent)")
    every = page.locator("#offers tbody tr").evaluate_all("rs => rs.map(r => r.textContent)")
    assert texts and all("p4d.24xlarge" in t for t in texts)
    assert len(texts) == sum("p4d.24xlarge" in t for t in every) < total
    page.fill("input[data-search]", "")
    # Hide sold out: the store's own count of offers not available now goes.
    with duckdb.connect(str(server.dashboard.site.store), read_only=True) as con:
        sold_out = con.execute("SELECT count(*) FROM latest_prices WHERE NOT available").fetchone()
    assert sold_out is not None and sold_out[0] > 0
    page.check("input[data-hide=sold-out]")
    page.wait_for_function(
        f"() => document.getElementById('shown').textContent === "
        f"'{total - sold_out[0]} of {total} offers shown'"
    )
    states = visible_rows(page).evaluate_all("rs => rs.map(r => r.cells[11].textContent)")
    assert not any("sold out" in s for s in states)


def test_every_column_sorts_both_ways(server: Running, page: Any) -> None:
    page.goto(server.url)
    page.select_option("select[data-money]", "native")  # in USD the currency column is one value
    page.select_option("select[data-workload]", "resnet50-train")  # its USD/unit column shows
    heads = page.locator("#offers thead th")
    for index in range(heads.count()):
        head = heads.nth(index)
        numeric = head.get_attribute("data-type") == "number"
        for direction in ("ascending", "descending"):
            head.click()
            assert head.get_attribute("aria-sort") == direction
            values = page.locator("#offers tbody tr").evaluate_all(
                f"rs => rs.map(r => r.cells[{index}].dataset.sort ?? r.cells[{index}].textContent)"
            )
            name = head.text_content()
            if numeric:
                numbers = [float(v.replace(",", "")) for v in values if v != ""]
                assert values[: len(numbers)] == [v for v in values if v != ""], name  # empty last
                wanted = sorted(numbers, reverse=direction == "descending")
                assert numbers == wanted, (name, direction)
            else:
                # The browser's own collation says whether neighbours are in order.
                order = page.evaluate(
                    "vs => vs.slice(1).every((v, i) => vs[i].localeCompare(v) <= 0)",
                    values if direction == "ascending" else values[::-1],
                )
                assert order, (name, direction)
            assert len(set(values)) > 1, name  # a column of one value would prove nothing


def _camel(key: str) -> str:
    # data-f-gpu_model is dataset["fGpu_model"]: only the letter after a hyphen is raised.
    return key[0].upper() + key[1:]


def test_hide_stale_leaves_out_the_offers_of_an_overdue_provider(
    demo_store: Path, tmp_path: Path, page: Any
) -> None:
    # The demo's collections are fresh: here one provider's last good run is a month old.
    store = Path(shutil.copy(demo_store, tmp_path / "prices.duckdb"))
    with duckdb.connect(str(store)) as con:
        con.execute(
            "UPDATE runs SET finished_at = finished_at - INTERVAL 30 DAY WHERE provider = 'aws'"
        )
        found = con.execute("SELECT count(*), count(*) FILTER (stale) FROM latest_prices")
        total, stale = found.fetchone() or (0, 0)
    assert 0 < stale < total
    config = config_mod.from_dict({"storage": {"path": str(store)}}, source=None)
    running = start_for(config, WebSettings("127.0.0.1", 0), "web.listen")
    try:
        page.goto(running.url)
        page.check("input[data-hide=stale]")
        page.wait_for_function(
            f"() => document.getElementById('shown').textContent === "
            f"'{total - stale} of {total} offers shown'"
        )
        providers = visible_rows(page).evaluate_all("rs => rs.map(r => r.dataset.fProvider)")
        assert "aws" not in providers
    finally:
        running.close()


def test_a_bookmarked_filter_shows_the_filtered_table(server: Running, page: Any) -> None:
    page.goto(server.url + "?gpu=H100&kind=on_demand")  # the command's spelling of the kind
    total = page.locator("#offers tbody tr").count()
    wanted = len(
        api(server, f"/api/latest?gpu=H100&kind=on-demand&include_sold_out=true&limit={total}")
    )
    page.wait_for_function(
        f"() => document.getElementById('shown').textContent === '{wanted} of {total} offers shown'"
    )
    assert page.locator("select[data-filter=gpu_model]").input_value() == "H100"
    assert page.locator("select[data-filter=kind]").input_value() == "on-demand"
    kinds = visible_rows(page).evaluate_all("rs => rs.map(r => r.dataset.fKind)")
    assert 0 < len(kinds) == wanted and set(kinds) == {"on-demand"}
    # Changing a filter changes the URL; reloading it shows the same table.
    page.select_option("select[data-filter=kind]", "spot")
    page.check("input[data-hide=sold-out]")
    page.wait_for_function("() => location.search === '?gpu=H100&kind=spot&hide=sold-out'")
    shown = page.locator("#shown").text_content()
    page.reload()
    page.wait_for_function(
        "text => document.getElementById('shown').textContent === text", arg=shown
    )
    assert page.locator("input[data-hide=sold-out]").is_checked()
    # Every filter off: the URL is the page's own again.
    page.select_option("select[data-filter=gpu_model]", "")
    page.select_option("select[data-filter=kind]", "")
    page.uncheck("input[data-hide=sold-out]")
    page.wait_for_function("() => location.search === ''")
    # A value no offer has is said, not silently dropped.
    page.goto(server.url + "?gpu=H1000")
    page.wait_for_function(
        "() => document.getElementById('shown').textContent.includes('no offer has gpu=H1000')"
    )


def test_the_table_fits_1280_pixels(server: Running, page: Any) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(server.url)
    every = page.locator("#offers tbody tr").count()
    page.wait_for_function(
        f"() => document.getElementById('shown').textContent.startsWith('{every} ')"
    )
    edges = page.evaluate(
        "() => [...document.querySelectorAll('#offers thead th')]"
        ".map(th => th.getBoundingClientRect().right)"
    )
    width = page.evaluate("document.documentElement.clientWidth")
    assert width == 1280 and len(edges) > 10
    assert max(edges) <= width  # the last column's right edge is on screen
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # no sideways scroll


def test_the_decide_form_takes_switching_and_a_baseline(server: Running, page: Any) -> None:
    page.goto(server.url + "decide")
    page.select_option("#tco-form select[name=gpu]", "A100")
    page.fill("#tco-form input[name=utilization]", "0.5")
    page.fill("#tco-form input[name=migration_cost]", "5000")
    page.select_option("#tco-form select[name=current]", "aws")
    page.fill("#tco-form input[name=baseline]", "4")
    page.click("#tco-form button[type=submit]")
    applied = page.wait_for_selector("#applied").text_content()
    assert applied == (
        "applied: migration cost 5,000 USD (every option away from aws), current aws, "
        "baseline 4 of 8 GPUs reserved, the rest on-demand or spot"
    )
    query = "gpu=A100&utilization=0.5&migration_cost=5000&current=aws&baseline=4"
    plans = api(server, f"/api/tco?{query}")
    rows = page.locator("#blends tbody tr")
    assert rows.count() == len(plans) > 0
    assert rows.first.locator("td").nth(3).text_content() == f"{plans[0]['total_usd']:,.2f}"
    # The single strategies carry the migration cost too: the best is the API's best.
    best = api(server, f"/api/tco?{query.replace('&baseline=4', '')}&limit=1")[0]
    first = page.locator("#tco tbody tr").first.locator("td")
    assert first.nth(3).text_content() == f"{best['total_usd']:,.2f}"
    # The form keeps what was asked, for the next question.
    assert page.locator("#tco-form input[name=migration_cost]").input_value() == "5000"
    assert page.locator("#tco-form select[name=current]").input_value() == "aws"
    # The plans' long parts wrap: at 1,280 px the page does not scroll sideways.
    page.set_viewport_size({"width": 1280, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280


def test_the_history_window_offers_180_days_and_says_what_it_draws(
    server: Running, page: Any
) -> None:
    page.goto(server.url + "history")
    page.select_option("#history-form select[name=gpu]", "A100")
    page.select_option("#history-form select[name=since]", "180d")
    page.click("#history-form button[type=submit]")
    note = page.wait_for_selector("#window").text_content() or ""
    assert note.endswith("(180 days)")
    assert page.locator("#history-form select[name=since]").input_value() == "180d"


def test_the_readme_screenshot_script_takes_the_filtered_now_panel(tmp_path: Path) -> None:
    if not CHROMIUM.exists():
        _missing(f"{CHROMIUM} is absent (apt-get install chromium)")
    from PIL import Image

    script = Path(__file__).parents[2] / "docs" / "screenshot.py"
    out = tmp_path / "dashboard.png"
    done = subprocess.run(
        [sys.executable, str(script), "--out", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    with Image.open(out) as image:
        assert image.size == (1280, 820)
        # Not a blank page: the page's white and the many colours of text and header.
        colours = {colour for _, colour in image.convert("RGB").getcolors(1 << 16) or []}
    assert len(colours) > 20 and (255, 255, 255) in colours


def test_a_workload_shows_usd_per_unit_as_the_api_gives_it(server: Running, page: Any) -> None:
    page.goto(server.url)
    unit = page.locator("#offers thead th.unit")
    assert not unit.is_visible()  # no workload chosen: no column
    page.select_option("select[data-workload]", "resnet50-train")
    assert unit.is_visible()
    url = server.url + "api/latest?provider=aws&gpu=H100&kind=on-demand&workload=resnet50-train"
    with urllib.request.urlopen(url, timeout=60) as answer:
        p5 = next(r for r in json.loads(answer.read()) if r["instance_type"] == "p5.48xlarge")
    shown = page.locator("#offers tbody tr", has_text="p5.48xlarge").filter(has_text="on-demand")
    cell = shown.first.locator("td.unit")
    assert float(cell.text_content() or "nan") == pytest.approx(p5["usd_per_unit"], abs=1e-4)
