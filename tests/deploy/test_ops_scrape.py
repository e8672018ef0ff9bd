"""A real daemon's /metrics, scraped after a collection and an alert delivery, exports every
metric the shipped Grafana dashboard and Prometheus rules ask for (deploy/)."""

from __future__ import annotations

import signal
import socket
import urllib.request
from pathlib import Path

import pytest

from tests.deploy.ops_names import dashboard_expressions, exported, names_in, rule_expressions
from tests.tracker.daemon_support import DaemonProcess, replayed

pytestmark = pytest.mark.daemon


def test_a_real_daemon_exports_every_metric_the_ops_files_name(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a free loopback port for the daemon's metrics
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    extra = {
        "metrics": {"listen": f"127.0.0.1:{port}"},
        # A rule every Azure spot offer meets: one console delivery after the first collection.
        "alerts": {
            "rules": [
                {
                    "name": "any-spot",
                    "kind": "spot_price_below",
                    "threshold": 10_000.0,
                    "currency": "USD",
                },
            ]
        },
    }
    with (
        replayed(tmp_path, names=("azure",), interval="1h", extra=extra) as setup,
        DaemonProcess(setup) as daemon,
    ):
        # The job's own line comes after its alerts went out and its metrics were counted.
        daemon.wait_for(lambda lines: any("azure ok: " in line for line in lines))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:
            text = answer.read().decode()
        assert daemon.stop(signal.SIGTERM) == 0
    ours = exported(text)
    asked = names_in(dashboard_expressions() + rule_expressions())
    assert asked - ours == set()
    assert 'gpu_tracker_alert_deliveries_total{channel="console",result="ok"} 1.0' in text
    assert 'gpu_tracker_collection_interval_seconds{provider="azure"} 3600.0' in text
    assert 'gpu_tracker_collections_total{provider="azure",result="ok"} 1.0' in text
