"""A provider that accepts the connection and never answers no longer hangs a sweep: the call
times out, the attempt is an infrastructure ``timeout``, retried, then the trial is incomplete;
and a trial past its deadline starts no further call."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE

from pipeline.execution.retry import RetryPolicy
from pipeline.models.config import ModelConfig
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.stages import execute_plan, plan
from pipeline.trial.run import RunContext, run_trial
from warehouse.query import run_sql


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Listens (the kernel completes every handshake) and never reads nor answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        yield f"http://127.0.0.1:{server.getsockname()[1]}/v1"


def test_a_silent_provider_times_out_as_infrastructure_and_the_sweep_ends(
        ray_local: Any, tmp_path: Path, silent_server: str) -> None:
    root = tmp_path / "warehouse"
    settings = ModelConfig("openai/silent", api_base=silent_server, timeout_s=1.0)
    config = SweepConfig(suites=[MEETING_SUITE], scenarios=["V1", "F1"], models=[settings],
                         memory_modes=["chat"], repeats=1,
                         run_id="silent", warehouse=root,
                         retry=RetryPolicy(max_attempts=2, backoff_base_s=0.1, backoff_max_s=0.2,
                                           max_outage_s=0))  # a dead provider is not waited out
    started = time.monotonic()
    statuses = execute_plan(config, plan(config))
    assert time.monotonic() - started < 60
    assert statuses == {"incomplete": 2}
    rows = run_sql(root, "select error_kind, count(*), max(attempt) from attempts "
                         "group by 1").rows
    assert rows == [("timeout", 4, 2)]
    assert run_sql(root, "select count(*) from trials where passed is not null").rows == [(0,)]


def test_a_trial_past_its_deadline_starts_no_further_call() -> None:
    from dataclasses import replace

    config = SweepConfig(suites=[MEETING_SUITE], scenarios=["V1"], memory_modes=["chat"],
                         repeats=1, warehouse=Path("/nonexistent"))
    (spec,) = plan(config).pending
    result = run_trial(replace(spec, deadline_s=0.0), RunContext("deadline", "test"))
    assert (result.status, result.trial.error_kind) == ("incomplete", "timeout")
    assert "deadline" in (result.trial.error_message or "")
