"""The Grafana dashboard and Prometheus rules under deploy/: promtool accepts the rules and
their unit tests pass (each rule fires when it should, and only then), and every metric they
name is one the daemon defines and docs/daemon.md lists. A real daemon's /metrics is checked
against them in test_ops_scrape.py (`-m daemon`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from tests.deploy.ops_names import (
    DASHBOARD,
    RULE_TESTS,
    RULES,
    dashboard_expressions,
    exported,
    names_in,
    rule_expressions,
)
from tracker.daemon.metrics import Metrics

DOCS = (Path(__file__).parents[2] / "docs" / "daemon.md").read_text()
# Debian's `prometheus` package: skipped without it, except in CI, which installs it (.ci/run).
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None and not os.environ.get("CI"), reason="promtool is not installed"
)


def _promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@needs_promtool
def test_promtool_checks_the_rules() -> None:
    done = _promtool("check", "rules", RULES.name, cwd=RULES.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 5 rules found" in done.stdout


@needs_promtool
def test_every_rule_fires_when_it_should_and_only_then() -> None:
    done = _promtool("test", "rules", RULE_TESTS.name, cwd=RULE_TESTS.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    tested = {t["alertname"] for t in _rule_tests()}
    rules = {r["alert"] for r in _rules()}
    assert tested == rules, f"rules without a promtool test: {sorted(rules - tested)}"


def test_every_name_they_ask_for_is_a_metric_of_the_daemon() -> None:
    metrics = Metrics()
    metrics.delivered([])  # nothing delivered: the family is declared all the same
    ours = exported(generate_latest(metrics.registry).decode())
    asked = names_in(dashboard_expressions() + rule_expressions())
    assert {"gpu_tracker_alert_deliveries_total", "gpu_tracker_runs_held_total"} <= asked
    assert asked - ours == set()


def test_every_metric_they_ask_for_is_documented() -> None:
    for name in names_in(dashboard_expressions() + rule_expressions()):
        if name.startswith("process_"):
            continue
        family = name.removesuffix("_bucket")
        assert f"`{family}`" in DOCS, f"docs/daemon.md does not list {family}"


def test_the_dashboard_is_an_importable_grafana_model() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert {"datasource", "job", "gpu"} <= variables
    for panel in panels:
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["targets"] and all(t["expr"] for t in panel["targets"]), panel["title"]
        assert 'job=~"$job"' in panel["targets"][0]["expr"], panel["title"]
    titles = " ".join(p["title"] for p in panels).lower()
    for topic in ("collections", "failures", "data age", "held", "alert deliveries", "cheapest"):
        assert topic in titles


def _rules() -> list[dict[str, object]]:
    import yaml

    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def _rule_tests() -> list[dict[str, object]]:
    import yaml

    tests = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    return [check for test in tests for check in test["alert_rule_test"]]
