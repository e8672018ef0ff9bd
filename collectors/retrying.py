"""The providers asked through their official SDKs with the SDK's own retry off (Tencent,
Huawei, Volcano Engine): what each did for itself, kept in one place.

Their SDKs either retry nothing or retry what should fail at once (a refused key), so the
collector retries: throttling, 5xx and network failures, with exponential backoff from
`backoff_s` (doubled each time, at most `MAX_BACKOFF_S`), `max_retries` times; any other error
fails the run at once, described by the provider's own words. The price site is the account's
(`kit.site_currency`), and the credential is a key pair whose two parts must both be set.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from collectors import kit
from collectors.base import Collector, Progress, ProviderSettings
from collectors.common import FetchError, MissingCredentials

MAX_BACKOFF_S = 20.0

T = TypeVar("T")


@dataclass
class ApiError(Exception):
    """An SDK's error answer, a failed connection or an answer the SDK could not read: its code
    and message, and the HTTP status and request id where it has them. A provider's SDK module
    says which are `retryable` (the rest fail the run at once)."""

    code: str
    message: str
    status: int | None = None
    request_id: str | None = None

    def __post_init__(self) -> None:
        super().__init__(f"{self.code}: {self.message}")

    @property
    def overloaded(self) -> bool:
        """HTTP 429 or a 5xx: the server's own "ask again later"."""
        return self.status == 429 or (self.status is not None and self.status >= 500)

    @property
    def retryable(self) -> bool:
        return self.overloaded


E = TypeVar("E", bound=ApiError)


class SdkCollector(Collector):
    """A provider asked through its SDK: the site's currency, the key pair, and `retried`."""

    credential_keys: ClassVar[tuple[str, str]] = ("access_key_id", "secret_access_key")
    credential_vars: ClassVar[str]  # the two variables, as MissingCredentials names them

    def __init__(
        self,
        settings: ProviderSettings,
        progress: Progress | None = None,
        *,
        backoff_s: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(settings, progress)
        self.currency = kit.site_currency(self.name, settings.options)
        self.backoff_s = backoff_s  # the first retry's wait, doubled each time after
        self._sleep = sleep

    def check_credentials(self) -> None:
        if not set(self.credential_keys) <= self.settings.credentials.keys():
            raise MissingCredentials(self.name, self.credential_vars)

    def retried(
        self,
        where: str,
        do: Callable[[], T],
        error: type[E],
        describe: Callable[[E, str, int], str],
        *,
        passes: Callable[[E], bool] = lambda failed: False,
    ) -> T:
        """`do()`, asked again after a retryable `error` with backoff; any other (or the last
        retryable one) a FetchError in `describe(error, where, attempts)`'s words. An error
        that `passes` says is the caller's to handle is raised as it is."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return do()
            except error as failed:
                if passes(failed):
                    raise
                if not failed.retryable or attempt > self.settings.max_retries:
                    raise FetchError(self.name, describe(failed, where, attempt)) from failed
                delay = min(self.backoff_s * 2 ** (attempt - 1), MAX_BACKOFF_S)
                # INFO, like urllib3's: how it ended is the run summary's line (-v shows these).
                self.log.info(
                    "%s: %s: %s (attempt %d); retrying in %.1f s",
                    self.name,
                    where,
                    failed.code,
                    attempt,
                    delay,
                )
                self._sleep(delay)
