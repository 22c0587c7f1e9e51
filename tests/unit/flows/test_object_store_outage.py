"""The sweep flow against a warehouse on object storage that goes away (moto behind a loopback
forwarder): a few seconds' outage is waited out and the sweep finishes; past the bound it stops
with one line and exit 3, and a resume completes the grid with one row per trial."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from conftest import MEETING_SUITE
from helpers.tcp_forwarder import TcpForwarder
from rich.console import Console

from pipeline.errors import ExitCode
from pipeline.models.config import ModelConfig
from pipeline.sweep.config import SweepConfig
from warehouse.location import S3Location
from warehouse.objectstore import live_records
from warehouse.query import run_sql
from warehouse.store_retry import ENV

pytestmark = pytest.mark.slow  # a Prefect flow on a local Ray


def _sweep(tmp_path: Path, root: S3Location, resume: bool = False) -> SweepConfig:
    suite = tmp_path / "small.jsonl"
    suite.write_text("\n".join(MEETING_SUITE.read_text("utf-8").splitlines()[:3]) + "\n")
    return SweepConfig(suites=[suite], memory_modes=["chat"], repeats=2, run_id="s3out",
                       warehouse=root, models=[ModelConfig("reference/golden")],
                       max_in_flight=1, batch_size=1, resume=resume)


def _cut_after_first_batch(forwarder: TcpForwarder, root: S3Location,
                           away_s: float | None) -> threading.Thread:
    """Once the run's first batch is committed, the endpoint goes away (for ``away_s``, or
    until the test brings it back)."""
    def cut() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not [
                r for r in live_records(root, ["s3out"]) if r.kind == "batch"]:
            time.sleep(0.05)
        forwarder.stop()
        if away_s is not None:
            time.sleep(away_s)
            forwarder.start()
    thread = threading.Thread(target=cut, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def forwarder(s3_warehouse: S3Location, s3_endpoint: str,
              monkeypatch: pytest.MonkeyPatch) -> Any:
    ahead = TcpForwarder(int(urlsplit(s3_endpoint).port or 0))
    ahead.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", ahead.endpoint)
    yield ahead
    ahead.stop()


def test_an_outage_of_seconds_is_waited_out(
        ray_local: Any, prefect_harness: None, tmp_path: Path, s3_warehouse: S3Location,
        forwarder: TcpForwarder) -> None:
    import flows.sweep as sweep

    cut = _cut_after_first_batch(forwarder, s3_warehouse, away_s=3.0)
    outcome = sweep.sweep_flow(_sweep(tmp_path, s3_warehouse))
    cut.join()
    assert outcome.stopped is None and outcome.statuses == {"complete": 6}


def test_past_the_bound_one_line_exit_3_then_resume_completes(
        ray_local: Any, prefect_harness: None, tmp_path: Path, s3_warehouse: S3Location,
        forwarder: TcpForwarder, monkeypatch: pytest.MonkeyPatch) -> None:
    import flows.sweep as sweep
    from pipeline.cli.run import Terminal, report

    monkeypatch.setenv(ENV, "2")
    config = _sweep(tmp_path, s3_warehouse)
    cut = _cut_after_first_batch(forwarder, s3_warehouse, away_s=None)
    outcome = sweep.sweep_flow(config)
    cut.join()
    out, err = io.StringIO(), io.StringIO()
    ending = report(config, outcome, Terminal(Console(file=out, width=400),
                                              Console(file=err, width=400)))
    assert ending.code == ExitCode.INCOMPLETE == 3
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"error: stopped: object storage at {forwarder.endpoint} did not answer for 2 s"), lines
    assert lines[0].endswith(f"Bring object storage at {forwarder.endpoint} back, then: "
                             "agentsweep run --run-id s3out --resume"), lines

    forwarder.start()
    resumed = sweep.sweep_flow(_sweep(tmp_path, s3_warehouse, resume=True))
    assert resumed.stopped is None
    assert run_sql(s3_warehouse, "select count(*), count(distinct trial_id), "
                                 "count(*) filter (where status = 'complete') from trials_all"
                   ).rows == [(6, 6, 6)]
