"""AWS without an account: the public offer files, the spot feed and the Spot Advisor's data.

- Offer files: the EC2 region index names each region's current file; its CSV form (five
  metadata lines, then a quoted header, then one row per price dimension) is read as it
  arrives, row by row, and only the rows that can be a GPU instance are kept (about 1 %). A
  region's file is hundreds of megabytes: it is never held whole.
- A region whose file did not change since the last run is not read again: what was kept of
  it (its GPU rows, the file's URL, ETag and Last-Modified) is saved per region in the
  collector's state folder. The index names a new versioned URL when AWS publishes a new file;
  the same URL is not asked again, a new one is asked with If-None-Match / If-Modified-Since.
- The spot feed (JSONP) and the Advisor's JSON are small and read whole.

`fetch` returns the kept rows, the feed and the Advisor's answer as payloads, like every
collector; `collectors.aws.feeds` and `collectors.aws` turn them into records.
"""

from __future__ import annotations

import csv
import io
import json
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urljoin

import requests
import urllib3

from collectors import kit
from collectors.aws import feeds, savings, transfer
from collectors.aws.kept import KeptFiles
from collectors.base import Payloads, ProviderSettings
from collectors.common import CollectorError, FetchError, PayloadShapeError
from collectors.http import make_session

OFFERS_ENDPOINT = "https://pricing.us-east-1.amazonaws.com"
REGION_INDEX = "/offers/v1.0/aws/AmazonEC2/current/region_index.json"
SPOT_FEED_URL = "https://spot-price.s3.amazonaws.com/spot.js"
SPOT_ADVISOR_URL = "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json"
METADATA_LINES = 5  # FormatVersion, Disclaimer, Publication Date, Version, OfferCode
STATE_FOLDER = "aws-offers"


class PublicFiles:
    """Fetches the public files for the regions and instance types asked."""

    def __init__(self, settings: ProviderSettings, log: Any, progress: Any) -> None:
        self.settings = settings
        self.log = log
        self.progress = progress
        self.session = make_session(max_retries=settings.max_retries)
        options = settings.options
        self.offers_endpoint = str(options.get("offers_endpoint") or OFFERS_ENDPOINT)
        self.spot_feed_url = str(options.get("spot_feed_url") or SPOT_FEED_URL)
        self.advisor_url = str(options.get("spot_advisor_url") or SPOT_ADVISOR_URL)
        state = settings.state_dir
        self.state = state / STATE_FOLDER if state is not None else None
        self.kept = KeptFiles(self.state, log, "the offer file")
        self.items = 0

    def fetch(self, regions: tuple[str, ...], *, advisor: bool = True) -> Payloads:
        with self.session:
            payloads: Payloads = {}
            index = self._json(urljoin(self.offers_endpoint, REGION_INDEX), "region index")
            for region in regions:
                url = _version_url(index, region)
                if url is None:
                    self.log.warning("aws: the region index names no offer file for %s", region)
                    continue
                csv_url = urljoin(self.offers_endpoint, url.removesuffix(".json") + ".csv")
                payloads[f"public/offers/{region}"] = self._offer_file(region, csv_url)
                self.progress(len(payloads), self.items)
            # The Savings Plans rates of the GPU usages the EC2 files list (collectors.aws.savings)
            usages = {r: savings.usages(payloads[f"public/offers/{r}"]) for r in regions
                      if f"public/offers/{r}" in payloads}  # fmt: skip
            payloads.update(savings.SavingsPlanFiles(self).fetch(usages))
            payloads["public/spot"] = self._json(self.spot_feed_url, "spot feed", jsonp=True)
            found = self.advisor() if advisor else None
            if found is not None:
                payloads["public/advisor"] = found
            return payloads

    def advisor(self) -> dict[str, Any] | None:
        """The Advisor's answer, with the date it was published (Last-Modified) where given;
        None when it cannot be read: the bands are extra, never worth the prices of a run (the
        stored ones stay as they are)."""
        try:
            response = self._get(self.advisor_url, "Spot Advisor")
            with response:
                data = _decode(response.content, "Spot Advisor")
        except CollectorError as exc:
            self.log.warning("aws: the Spot Advisor's bands are left as they were: %s", exc)
            return None
        stamp = _http_date(response.headers.get("Last-Modified"))
        return {"last_modified": stamp, "data": data}

    # -- offer files ----------------------------------------------------------------------

    def _offer_file(self, region: str, url: str) -> dict[str, Any]:
        seen = self._seen(region)
        # A versioned URL names one file for good: the same URL is the same file.
        if seen and seen.get("url") == url:
            self.log.info("aws: %s offer file unchanged (%s), not read again", region, url)
            return {**seen, "reused": True}
        headers = {}
        if seen and seen.get("etag"):
            headers["If-None-Match"] = seen["etag"]
        if seen and seen.get("last_modified"):
            headers["If-Modified-Since"] = seen["last_modified"]
        response = self._get(url, f"{region} offer file", headers=headers, stream=True)
        with response:
            if response.status_code == 304 and seen:
                self.log.info("aws: %s offer file not modified, not read again", region)
                # Kept under the new URL: the next run asks nothing until the index moves on.
                same = {**seen, "url": url}
                self.kept.write(region, same)
                return {**same, "reused": True}
            columns, rows, moves = self._gpu_rows(region, response)
        kept = {
            "kept_for": list(feeds.COLUMNS),
            "transfer": {"columns": list(transfer.COLUMNS), "rows": moves},
            "url": url,
            "etag": response.headers.get("ETag"),
            "last_modified": response.headers.get("Last-Modified"),
            "columns": columns,
            "rows": rows,
        }
        self.kept.write(region, kept)
        return {**kept, "reused": False}

    def _gpu_rows(
        self, region: str, response: requests.Response
    ) -> tuple[list[str], Any, list[list[str]]]:
        """The kept columns of the rows that can be a GPU instance, read as they arrive, and
        the data transfer rows (`collectors.aws.transfer`)."""
        reader = csv.reader(_lines(response))
        try:
            for _ in range(METADATA_LINES):
                next(reader)
            header = next(reader)
        except StopIteration:
            raise PayloadShapeError("aws", f"{region} offer file: ends before its header") from None
        except (csv.Error, UnicodeDecodeError) as exc:
            raise PayloadShapeError("aws", f"{region} offer file: {exc}") from exc
        keep = [header.index(c) for c in feeds.COLUMNS if c in header]
        if "Instance Family" not in header or "GPU" not in header:
            raise PayloadShapeError("aws", f"{region} offer file: no Instance Family/GPU column")
        family, gpu, width = header.index("Instance Family"), header.index("GPU"), len(header)
        rows, moves, moving = [], [], transfer.Picker(header)
        try:
            for row in reader:
                if len(row) != width:
                    continue
                if feeds.might_be_gpu(row, family, gpu):
                    rows.append([row[i] for i in keep])
                elif moving.wanted(row):
                    moves.append(moving.kept(row))
        except (csv.Error, UnicodeDecodeError) as exc:  # not UTF-8: not an offer file
            raise PayloadShapeError("aws", f"{region} offer file: {exc}") from exc
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise FetchError("aws", f"{region} offer file: the download broke off: {exc}") from exc
        self.items += len(rows)
        return [header[i] for i in keep], rows, moves

    def _seen(self, region: str) -> dict[str, Any] | None:
        seen = self.kept.read(region)
        if seen is None or not isinstance(seen.get("rows"), list):
            return None
        # Rows kept by a version that copied other columns would parse differently: read again.
        kept_for = seen.get("kept_for") == list(feeds.COLUMNS)
        moves = kit.obj(seen.get("transfer")).get("columns") == list(transfer.COLUMNS)
        return seen if kept_for and moves else None

    # -- HTTP -----------------------------------------------------------------------------

    def _get(
        self, url: str, what: str, *, headers: dict[str, str] | None = None, stream: bool = False
    ) -> requests.Response:
        try:
            response = self.session.get(
                url, headers=headers, stream=stream, timeout=self.settings.timeout
            )
        except requests.RequestException as exc:
            raise FetchError("aws", f"{what} ({url}): {exc}") from exc
        if response.status_code not in (200, 304):
            response.close()
            raise FetchError("aws", f"{what} ({url}): HTTP {response.status_code}")
        return response

    def _json(self, url: str, what: str, *, jsonp: bool = False) -> Any:
        response = self._get(url, what)
        with response:
            if jsonp:
                return feeds.unwrap_callback(response.content.decode("utf-8", "replace"))
            return _decode(response.content, what)


def _lines(response: requests.Response) -> io.TextIOWrapper:
    """The body as text, decoded as it streams in: csv.reader asks it for one line at a time."""
    response.raw.decode_content = True  # a gzip-encoded answer is unpacked on the way
    response.raw.auto_close = False  # else the wrapper meets a closed file at the end
    return io.TextIOWrapper(response.raw, encoding="utf-8-sig", newline="")  # type: ignore[arg-type]


def _decode(content: bytes, what: str) -> Any:
    try:
        return json.loads(content)
    except (ValueError, RecursionError) as exc:
        raise PayloadShapeError("aws", f"{what}: not JSON") from exc


def _version_url(index: Any, region: str) -> str | None:
    entry = kit.obj(kit.obj(kit.obj(index).get("regions")).get(region))
    # The key was renamed once; read both spellings.
    url = entry.get("currentVersionUrl") or entry.get("currentVersionURL")
    return url if isinstance(url, str) and url else None


def _http_date(value: str | None) -> str | None:
    try:
        return parsedate_to_datetime(value).isoformat() if value else None
    except (TypeError, ValueError):
        return None
