"""Retries, limits and lost workers on a real local Ray, against the reference HTTP server.

Trials run as ``openai/golden`` through LiteLLM's real OpenAI path to a server on 127.0.0.1
that injects real 429s (with Retry-After), 500s, hangs and dropped sockets; the warehouse is
real Parquet and the assertions are DuckDB SQL over it.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE, descendants

from pipeline.execution.retry import RetryPolicy
from pipeline.models.faults import FaultProfile
from pipeline.reference.reference import SCRIPT_KEY, golden_script
from pipeline.reference.server import ServerHandle, _Handler, start_server
from pipeline.reference.wire import WireName
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.stages import SweepPlan, execute_plan, plan, summarize
from warehouse.query import run_sql

pytestmark = pytest.mark.slow  # fault drills on Ray: injected errors, real backoff, a killed worker

INFRA_KINDS = ("rate_limit", "timeout", "connection", "server_error", "overloaded",
               "harness_error")
TWENTY_PERCENT = FaultProfile(rate_limit=0.05, retry_after_s=0.2, server_error=0.05,
                              timeout=0.05, timeout_sleep_s=3, connection_drop=0.05)


def _small_suite(directory: Path, scenarios: int = 4) -> Path:
    """The first scenarios of the meeting-room suite: a grid that stays small as it grows."""
    lines = MEETING_SUITE.read_text("utf-8").splitlines()[:scenarios]
    directory.mkdir(parents=True, exist_ok=True)
    suite = directory / "small.jsonl"
    suite.write_text("\n".join(lines) + "\n", "utf-8")
    return suite


def _http_plan(config: SweepConfig, server: ServerHandle, **call: Any) -> SweepPlan:
    """The grid of ``config`` with every trial sent to the reference server as openai/golden."""
    base = plan(config)
    pending = [replace(s, extra={"api_base": server.api_base, "api_key": "sk-test-not-a-key",
                                 "extra_body": {SCRIPT_KEY: golden_script(s.scenario)}, **call})
               for s in base.pending]
    return replace(base, pending=pending)


def _config(root: Path, run_id: str, retry: RetryPolicy, repeats: int = 3,
            **extra: Any) -> SweepConfig:
    suite = _small_suite(root.parent / "suite")
    extra.setdefault("models", ["openai/golden"])
    return SweepConfig(suites=[suite], memory_modes=["chat"],
                       repeats=repeats, run_id=run_id, warehouse=root, retry=retry,
                       batch_size=5, **extra)


def _rows(root: Path, sql: str) -> list[tuple[Any, ...]]:
    return run_sql(root, sql).rows


def _no_infra_error_counts_against_the_agent(root: Path, run_id: str) -> None:
    assert _rows(root, f"""select count(*) from trials where run_id = '{run_id}' and
        (status in ('agent_error', 'limit') or passed = false
         or (status = 'incomplete' and (passed is not null
             or error_kind not in {INFRA_KINDS})))""") == [(0,)]


@pytest.fixture(scope="module")
def faulty() -> Iterator[ServerHandle]:
    with start_server(faults=TWENTY_PERCENT, seed=4) as handle:
        yield handle


def test_twenty_percent_infra_errors_all_retried_to_complete(
        ray_local: Any, faulty: ServerHandle, tmp_path: Path) -> None:
    root = tmp_path / "wh"
    retry = RetryPolicy(max_attempts=40, backoff_base_s=0.01, backoff_max_s=0.25)
    config = _config(root, "faulty", retry)
    statuses = execute_plan(config, _http_plan(config, faulty, timeout=1.0))
    grid = 4 * 3
    assert statuses == {"complete": grid}
    assert _rows(root, "select count(*), count(distinct trial_id), bool_and(passed), "
                       "count(distinct attempt_id) from trials") == [(grid, grid, True, grid)]
    assert _rows(root, "select count(*) from trials_all") == [(grid,)]  # only final attempts
    attempts = _rows(root, "select error_kind, count(*) from attempts where outcome = "
                           "'incomplete' group by all")
    kinds = {kind for kind, _ in attempts}
    assert kinds and kinds <= {"rate_limit", "timeout", "connection", "server_error"}
    # attempt numbers run 1..n per trial, the last one is the trials row, and it completed
    assert _rows(root, """select count(*) from (
        select trial_id, count(*) n, max(attempt) m, min(attempt) lo,
               count(*) filter (where retry_delay_s is null) finals
        from attempts group by trial_id) where n <> m or lo <> 1 or finals <> 1""") == [(0,)]
    assert _rows(root, """select count(*) from trials t join attempts a using (attempt_id)
        where a.outcome = 'complete' and a.retry_delay_s is null""") == [(grid,)]
    # Retry-After (0.2 s) is honoured: no rate-limited attempt retried sooner
    assert _rows(root, "select count(*) from attempts where error_kind = 'rate_limit' "
                       "and retry_delay_s < 0.2") == [(0,)]
    columns, rows = summarize(root, "faulty")
    total_attempts = _rows(root, "select count(*) from attempts")[0][0]
    assert sum(r[columns.index("repeats")] for r in rows) == grid
    assert sum(r[columns.index("retries")] for r in rows) == total_attempts - grid > 0
    _no_infra_error_counts_against_the_agent(root, "faulty")


EVERY_FAULT = FaultProfile(rate_limit=0.08, retry_after_s=0.2, server_error=0.05,
                           overloaded=0.08, timeout=0.04, timeout_sleep_s=3,
                           connection_drop=0.05)


@pytest.mark.parametrize("wire", ["anthropic", "gemini"])
def test_other_wire_formats_retry_every_fault_to_complete(
        ray_local: Any, tmp_path: Path, wire: WireName) -> None:
    """A sweep of anthropic/golden or gemini/golden on Ray, through LiteLLM's own provider
    paths: each fault lands as an infrastructure attempt of the same kinds as OpenAI's (an
    overload as ``overloaded``), is retried, and usage reaches the trials."""
    with start_server(faults=EVERY_FAULT, seed=11, wire=wire) as server:
        root = tmp_path / "wh"
        retry = RetryPolicy(max_attempts=40, backoff_base_s=0.01, backoff_max_s=0.25)
        config = _config(root, f"faults-{wire}", retry, repeats=2, models=[f"{wire}/golden"])
        statuses = execute_plan(config, _http_plan(config, server, timeout=1.0))
    assert statuses == {"complete": 8}
    assert _rows(root, "select bool_and(passed), min(input_tokens) > 0, min(output_tokens) > 0, "
                       "min(model_version), max(model_version) from trials") == [
        (True, True, True, "golden-2026-11", "golden-2026-11")]
    kinds = {kind for (kind,) in _rows(root, "select distinct error_kind from attempts "
                                             "where outcome = 'incomplete'")}
    assert "overloaded" in kinds and kinds <= {"rate_limit", "timeout", "connection",
                                               "server_error", "overloaded"}
    assert _rows(root, "select count(*) from attempts where error_kind = 'rate_limit' "
                       "and retry_delay_s < 0.2") == [(0,)]
    _no_infra_error_counts_against_the_agent(root, f"faults-{wire}")


def test_without_retries_failures_stay_incomplete_and_out_of_pass_rates(
        ray_local: Any, faulty: ServerHandle, tmp_path: Path) -> None:
    root = tmp_path / "wh"
    config = _config(root, "once", RetryPolicy(max_attempts=1))
    statuses = execute_plan(config, _http_plan(config, faulty, timeout=1.0))
    grid = 4 * 3
    assert set(statuses) <= {"complete", "incomplete"} and sum(statuses.values()) == grid
    assert statuses.get("incomplete", 0) > 0  # ~60% of trials meet a fault at 20% per call
    assert _rows(root, "select count(*), count(distinct trial_id) from trials") == [(grid, grid)]
    assert _rows(root, "select count(*), max(attempt), count(retry_delay_s) from attempts"
                 ) == [(grid, 1, 0)]
    columns, rows = summarize(root, "once")
    col = {name: columns.index(name) for name in ("k", "n", "incomplete")}
    assert sum(r[col["incomplete"]] for r in rows) == statuses["incomplete"]
    assert sum(r[col["n"]] for r in rows) == statuses.get("complete", 0)
    assert all(r[col["k"]] == r[col["n"]] for r in rows)  # golden passes what it finished
    _no_infra_error_counts_against_the_agent(root, "once")


class _CountingHandler(_Handler):
    """Counts chat completions open at once on the server."""

    lock = threading.Lock()
    open_now = 0
    most = 0

    def do_POST(self) -> None:
        cls = _CountingHandler
        with cls.lock:
            cls.open_now += 1
            cls.most = max(cls.most, cls.open_now)
        try:
            super().do_POST()
        finally:
            with cls.lock:
                cls.open_now -= 1


def test_provider_limit_holds_across_workers(ray_local: Any, tmp_path: Path) -> None:
    from pipeline.models.config import ModelConfig

    with start_server(faults=FaultProfile(latency_ms=150)) as server:
        server.server.RequestHandlerClass = _CountingHandler
        root = tmp_path / "wh"
        config = _config(root, "limited", RetryPolicy(max_attempts=1), repeats=2,
                         models=[ModelConfig("openai/golden", concurrency=3)])
        started = time.monotonic()
        statuses = execute_plan(config, _http_plan(config, server))
        elapsed = time.monotonic() - started
    assert statuses == {"complete": 8}
    assert _CountingHandler.most == 3  # 8 trials in flight on 2 workers, 3 calls at a time
    calls = _rows(root, "select sum(model_calls) from trials")[0][0]
    assert elapsed >= calls * 0.15 / 3 * 0.9


def _trial_workers() -> list[int]:
    pids = []
    for pid in descendants(os.getpid()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if handle.read().startswith(b"ray::TrialWorker"):
                    pids.append(pid)
        except OSError:
            continue
    return pids


@pytest.mark.timeout(120)  # leases of the dead worker not reclaimed = a hung sweep
def test_a_killed_worker_means_a_retry_not_a_loss_or_a_duplicate(
        ray_local: Any, tmp_path: Path) -> None:
    from pipeline.models.config import ModelConfig

    with start_server(faults=FaultProfile(latency_ms=700)) as server:
        root = tmp_path / "wh"
        config = _config(root, "killed", RetryPolicy(max_attempts=3, backoff_base_s=0.05),
                         repeats=1, models=[ModelConfig("openai/golden", concurrency=2)])
        sweep_plan = _http_plan(config, server)
        killed: list[int] = []

        def kill_the_workers_mid_trial() -> None:
            deadline = time.monotonic() + 45
            while sum(server.counts.values()) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)  # model calls are open on the server (2 at a time)
            for worker in _trial_workers():  # all of them: one may be a dying one of an
                try:                             # earlier test's pool, not running a trial
                    os.kill(worker, signal.SIGKILL)
                    killed.append(worker)
                except ProcessLookupError:
                    pass

        killer = threading.Thread(target=kill_the_workers_mid_trial)
        killer.start()
        statuses = execute_plan(config, sweep_plan)
        killer.join()
    assert killed, "no TrialWorker process found to kill"
    assert statuses == {"complete": 4}
    assert _rows(root, "select count(*), count(distinct trial_id), bool_and(passed) "
                       "from trials_all") == [(4, 4, True)]
    lost = _rows(root, "select trial_id, attempt, message from attempts "
                       "where error_kind = 'harness_error'")
    assert lost and all("Actor" in message for _, _, message in lost)
    assert _rows(root, "select count(*) from attempts") == [(4 + len(lost),)]
    retried = {trial for trial, _, _ in lost}
    assert _rows(root, f"""select count(*) from attempts a join trials t using (attempt_id)
        where a.trial_id in {tuple(retried) + ('',)} and a.attempt > 1""") == [(len(retried),)]


def test_sweep_flow_applies_model_settings_faults_and_limits(
        ray_local: Any, prefect_harness: None, tmp_path: Path) -> None:
    """Through the Prefect flow: faults of a reference model's settings, retried to complete."""
    from flows.sweep import sweep_flow
    from pipeline.models.config import ModelConfig

    root = tmp_path / "wh"
    settings = ModelConfig("reference/golden", concurrency=2, faults=FaultProfile(
        rate_limit=0.1, retry_after_s=0.05, server_error=0.1))
    config = SweepConfig(suites=[_small_suite(tmp_path)], memory_modes=["chat"], repeats=2,
                         run_id="flow-faults", warehouse=root, models=[settings],
                         retry=RetryPolicy(max_attempts=30, backoff_base_s=0.01,
                                           backoff_max_s=0.1))
    outcome = sweep_flow(config)
    assert outcome.statuses == {"complete": 8} and outcome.incomplete == 0
    assert _rows(root, "select count(*), count(distinct trial_id), bool_and(passed) "
                       "from trials") == [(8, 8, True)]
    assert _rows(root, "select count(*) > 8, count(*) filter (where error_kind in "
                       "('rate_limit', 'server_error')) > 0 from attempts") == [(True, True)]
