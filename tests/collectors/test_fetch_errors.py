"""The fetch errors every provider meets the same way, once over the registry: an endpoint that
refuses connections, one that never answers in time, one that keeps answering 500, credentials
missing or refused. Each goes through the provider's real client (SDK or requests) against
loopback, and each ends as an error that names the provider, never a hang, a traceback or an
empty success.

What differs per provider (its own error bodies, throttling codes, Retry-After) stays in that
provider's test file.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from collectors import REGISTRY, collector_class
from collectors.base import Collector, ProviderSettings
from collectors.common import FetchError, MissingCredentials
from tests.collectors.support import FIXTURES
from tests.tracker.daemon_support import wait_until
from tracker.collecting.replay import ReplayServer

TIMEOUT_S = 0.2


def _settings(provider: str, url: str, timeout: float) -> ProviderSettings:
    """A one-region, no-retry collection of `provider` asking `url`, with made-up keys."""
    base: dict[str, Any] = {"endpoint": url, "timeout": timeout, "max_retries": 0}
    per_provider: dict[str, dict[str, Any]] = {
        "aws": {
            "endpoint": None,
            "regions": ("us-east-1",),
            "options": {
                "pricing_endpoint": url,
                "ec2_endpoint": url,
                "instance_types": ["g4dn.xlarge"],
            },
            "credentials": {"aws_access_key_id": "AKIDTEST", "aws_secret_access_key": "x"},
        },
        "azure": {"regions": ("eastus",)},
        "gcp": {"regions": ("us-central1",), "credentials": {"api_key": "test-key"}},
        "tencent": {
            "regions": ("ap-singapore",),
            "credentials": {"secret_id": "id", "secret_key": "key"},
        },
        "alibaba": {
            "regions": ("cn-hangzhou",),
            "credentials": {"access_key_id": "id", "access_key_secret": "secret"},
        },
        "lambdalabs": {"credentials": {"api_key": "key"}},
        "paperspace": {"credentials": {"token": "token"}},
        "oci": {"regions": ("us-ashburn-1",), "options": {"shapes_endpoint": url}},
        "vultr": {},
        "vastai": {},
        "runpod": {"credentials": {"api_key": "key"}},
        "jarvislabs": {"credentials": {"api_key": "key"}},
        "cloudrift": {},
        "verda": {"credentials": {"client_id": "id", "client_secret": "secret"}},
        "hyperstack": {"credentials": {"api_key": "key"}},
        "fluidstack": {"credentials": {"api_key": "key"}},
        "seeweb": {"credentials": {"api_token": "token"}},
        "scaleway": {},
        "nebius": {"credentials": {"iam_token": "key"}},
        "huawei": {
            "regions": ("cn-north-4",),
            "credentials": {"access_key_id": "AKTEST", "secret_access_key": "key"},
        },
        "volcengine": {
            "regions": ("cn-beijing",),
            "credentials": {"access_key_id": "AKTEST", "secret_access_key": "key"},
        },
    }
    return ProviderSettings(**(base | per_provider[provider]))


def make(provider: str, url: str, timeout: float = TIMEOUT_S, retries: int = 0) -> Collector:
    settings = replace(_settings(provider, url, timeout), max_retries=retries)
    return collector_class(provider)(settings)


def test_the_table_covers_every_registered_provider() -> None:
    for provider in REGISTRY:
        assert _settings(provider, "http://127.0.0.1:9", 1.0).timeout == 1.0


@pytest.mark.parametrize("provider", sorted(REGISTRY))
def test_a_refused_connection_fails_naming_the_provider(provider: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    with pytest.raises(FetchError, match=rf"^{provider}: ") as caught:
        make(provider, f"http://127.0.0.1:{closed}").fetch()
    assert caught.value.provider == provider


@pytest.mark.parametrize("provider", sorted(REGISTRY))
def test_an_answer_slower_than_the_timeout_fails_naming_the_provider(
    provider: str,
    answering: Callable[..., ReplayServer],
    url_of: Callable[[str, ReplayServer], str],
) -> None:
    server = answering()
    # Held until the test is done: the answer never comes within the timeout, however busy
    # the machine is.
    release = server.exchanges[0].hold = threading.Event()
    try:
        with pytest.raises(FetchError, match=rf"^{provider}: "):
            make(provider, url_of(provider, server), retries=1).fetch()
        # A timeout is retried, max_retries times; the server may note the retry only after
        # the client has given up on it.
        wait_until(lambda: len(server.requests) == 2, "the retry reaching the server")
    finally:
        release.set()
    assert len(server.requests) == 2


@pytest.mark.parametrize("provider", sorted(REGISTRY))
def test_a_server_error_that_persists_fails_naming_the_provider(
    provider: str,
    answering: Callable[..., ReplayServer],
    monkeypatch: pytest.MonkeyPatch,
    url_of: Callable[[str, ReplayServer], str],
) -> None:
    server = answering(status=500, body=json.dumps({"message": "internal error"}))
    # The retry's backoff is each provider's own test's business; here it would only be waited.
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    with pytest.raises(FetchError, match=rf"^{provider}: "):
        make(provider, url_of(provider, server), timeout=2.0, retries=1).fetch()
    assert len(server.requests) == 2, "a 500 is retried, max_retries times"


# Whose SDK looks for keys in its own chain when none are configured, so a fetch without them
# is the SDK's refusal (its own test covers it), not a skip.
OWN_CHAIN = {"alibaba"}
REQUIRED = sorted(
    (provider, credential)
    for provider, info in REGISTRY.items()
    if provider not in OWN_CHAIN
    for credential in info.credential_env
)


@pytest.mark.parametrize(("provider", "credential"), REQUIRED)
def test_a_missing_credential_is_a_skip_naming_its_variable(provider: str, credential: str) -> None:
    info = REGISTRY[provider]
    settings = _settings(provider, "http://127.0.0.1:9", 1.0)
    others = {name: "x" for name in info.credential_env if name != credential}
    collector = collector_class(provider)(replace(settings, credentials=others))
    with pytest.raises(MissingCredentials, match=rf"^{provider}: no credentials; set ") as caught:
        collector.fetch()
    assert info.credential_env[credential] in str(caught.value)


def _strings(body: Any) -> list[str]:
    """The strings of a JSON body, at any depth."""
    if isinstance(body, dict):
        body = list(body.values())
    if isinstance(body, list):
        return [s for value in body for s in _strings(value)]
    return [body] if isinstance(body, str) else []


REFUSALS = sorted(p for p in REGISTRY if (FIXTURES / p / "error-401.json").exists())
# Whose client is an SDK that words a refusal its own way, not "HTTP 401 (check ...)".
SDK_WORDED = {"huawei", "nebius"}


@pytest.mark.parametrize("provider", REFUSALS)
def test_refused_credentials_fail_at_once_naming_the_variables(
    provider: str,
    answering: Callable[..., ReplayServer],
    url_of: Callable[[str, ReplayServer], str],
) -> None:
    """A 401 (the provider's own, from tests/fixtures/<provider>) is not retried; the error
    says which variables to check and what the provider said."""
    body = (FIXTURES / provider / "error-401.json").read_text()
    server = answering(status=401, body=body)
    with pytest.raises(FetchError, match=rf"^{provider}: ") as caught:
        make(provider, url_of(provider, server), timeout=2.0, retries=1).fetch()
    message = str(caught.value)
    info = REGISTRY[provider]
    for variable in (*info.credential_env.values(), *info.optional_credential_env.values()):
        assert variable in message
    assert any(said in message for said in _strings(json.loads(body)) if len(said) > 8)
    assert "HTTP 401 (check " in message or (provider in SDK_WORDED and "check " in message)
    assert len(server.requests) == 1
