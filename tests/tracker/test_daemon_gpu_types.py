"""The daemon's one line per collection carries the run summary's GPU types, as the CLI's
summary table does: how many types were priced, how many from the API's own facts, how many
have none yet (the types are named in the JSON fields and in the pipeline's own line).

A real collection of Lambda's recording with the test traps laid over it (a GPU the table
lacks, stored under Lambda's name for it, a type placed from its description, a price it
cannot read), from the loopback replay server, through the job's own log method; no daemon
process."""

from __future__ import annotations

import json
import logging
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pythonjsonlogger.json import JsonFormatter

from collectors import REGISTRY
from tests.collectors.test_lambdalabs import answer
from tracker.collecting import pipeline
from tracker.config import from_dict
from tracker.daemon.jobs import ProviderJob
from tracker.daemon.service import Daemon

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
RECORDING = Path(__file__).parents[2] / "tracker" / "demo_data" / "lambdalabs"


def test_the_job_line_says_the_gpu_types(
    replay: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "lambdalabs"
    shutil.copytree(RECORDING, folder)
    # The trap's B300 renamed to a GPU no table knows (invented): stored as "B400".
    traps = json.dumps(answer()).replace("B300 (288 GB SXM6)", "B400 (288 GB SXM6)")
    (folder / "instance-types.json").write_text(traps)
    server = replay(folder)
    providers: dict[str, Any] = {name: {"enabled": False} for name in REGISTRY}
    providers["lambdalabs"] = {"endpoint": server.url, "timeout": 2}
    data = {"storage": {"path": str(tmp_path / "p.duckdb")}, "providers": providers}
    config = from_dict(data, source=None)
    env = {"LAMBDA_API_KEY": "demo"}
    (outcome,) = pipeline.collect(config, env=env)
    daemon = Daemon(config, env)
    daemon.plan(NOW)
    (lambdalabs,) = config.enabled()
    with caplog.at_level(logging.INFO, logger="tracker.daemon"):
        ProviderJob(lambdalabs, daemon.shared)._log(outcome, "", "")
    (record,) = [r for r in caplog.records if r.name == "tracker.daemon"]
    # The recording's 17 GPU types, less gpu_4x_h100_sxm5 (its price a string: skipped),
    # plus gpu_8x_b300_sxm6 (its GPU new to the table) and gpu_4x_b200_sxm6: 18, every one from the
    # answer's own description; one of them without a model.
    assert record.getMessage().startswith("lambdalabs ok: 28 records, 28 changes in ")
    assert record.getMessage().endswith(
        "; GPU types: 18 priced, 18 from API facts, 1 without facts"
    )
    line = json.loads(JsonFormatter("%(message)s").format(record))
    assert (line["gpu_types"], line["gpu_types_from_api"]) == (18, 18)
    assert line["gpu_types_without_facts"] == ["gpu_8x_b300_sxm6"]


def test_a_failed_run_has_no_gpu_types(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    providers: dict[str, Any] = {name: {"enabled": False} for name in REGISTRY}
    providers["lambdalabs"] = {}
    data = {"storage": {"path": str(tmp_path / "p.duckdb")}, "providers": providers}
    config = from_dict(data, source=None)
    daemon = Daemon(config, {})
    daemon.plan(NOW)
    (lambdalabs,) = config.enabled()
    failed = pipeline.Outcome("lambdalabs", status="failed", error="HTTP 503")
    with caplog.at_level(logging.INFO, logger="tracker.daemon"):
        ProviderJob(lambdalabs, daemon.shared)._log(failed, "", "")
    (record,) = [r for r in caplog.records if r.name == "tracker.daemon"]
    assert "GPU types" not in record.getMessage()
    assert not hasattr(record, "gpu_types")
