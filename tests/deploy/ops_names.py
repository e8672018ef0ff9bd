"""The metric names the shipped operations files ask Prometheus for (deploy/)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families

DEPLOY = Path(__file__).parents[2] / "deploy"
DASHBOARD = DEPLOY / "grafana" / "gpu-tracker.json"
RULES = DEPLOY / "prometheus" / "gpu-tracker-rules.yml"
RULE_TESTS = DEPLOY / "prometheus" / "gpu-tracker-rules.test.yml"
# Prometheus's series names end in these for a histogram (and _total for a counter's samples).
HISTOGRAM_PARTS = ("_bucket", "_sum", "_count")
_NAME = re.compile(r"\b((?:gpu_tracker|process)_[a-z_]+)\b")


def dashboard_expressions() -> list[str]:
    """Every PromQL expression of the dashboard: its panels' queries and its variables'."""
    dashboard = json.loads(DASHBOARD.read_text())
    found = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    found += [v["definition"] for v in dashboard["templating"]["list"] if "definition" in v]
    return found


def rule_expressions() -> list[str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule["expr"] for group in groups for rule in group["rules"]]


def names_in(expressions: list[str]) -> set[str]:
    return {name for e in expressions for name in _NAME.findall(e)}


def exported(exposition: str) -> set[str]:
    """The series names a /metrics text answer offers: every sample's, and for each family
    its declared name (a labelled counter with no child yet shows only `# HELP` / `# TYPE`)
    with the parts its type adds."""
    names: set[str] = set()
    for family in text_string_to_metric_families(exposition):
        names.add(family.name)
        names.update(sample.name for sample in family.samples)
        if family.type == "histogram":
            names.update(family.name + part for part in HISTOGRAM_PARTS)
        if family.type == "counter":  # the parser drops the samples' _total from the name
            names.add(family.name + "_total")
    return names
