"""Real trials run as coroutines (``trials_as: coroutines``): the built-in agent's trials, their
model calls over LiteLLM's HTTP path to the reference server, wait on their worker's event loop
together without a thread each, and store the rows a thread each stores."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from conftest import MEETING_SUITE

from pipeline.execution import executor
from pipeline.models.config import ModelConfig
from pipeline.models.faults import FaultDecision
from pipeline.reference.server import start_server
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.stages import execute_plan, plan
from warehouse.query import run_sql

IN_FLIGHT = 44  # every trial of the grid at once
LATENCY_S = 0.3


def _slow(decision: FaultDecision) -> FaultDecision:
    return replace(decision, delay_s=LATENCY_S) if decision.kind == "none" else decision


def _rows(root: Path, run_id: str) -> list[tuple[Any, ...]]:
    return run_sql(root, "select trial_id, status, passed, model_calls, input_tokens, "
                         "output_tokens, error_kind from trials "
                         f"where run_id = '{run_id}' order by trial_id").rows


def test_trials_as_coroutines_wait_together_without_threads_and_store_the_same_rows(
        ray_local: Any, tmp_path: Path) -> None:
    with start_server() as server:
        decide = server.server.decide
        server.server.decide = lambda profile: _slow(decide(profile))  # type: ignore[method-assign]
        model = ModelConfig("reference-http/golden", api_base=server.api_base)
        threads: dict[str, int] = {}
        executor.shutdown_pool()  # a fresh worker, LiteLLM imported before the first trial
        fresh = executor.sized_pool(ray_local, IN_FLIGHT)
        fresh.preload()
        assert fresh.preloaded()
        for mode in ("coroutines", "threads"):  # the same worker: coroutines first
            config = SweepConfig(suites=[MEETING_SUITE], memory_modes=["chat"], repeats=4,
                                 run_id=mode, warehouse=tmp_path / "wh", models=[model],
                                 max_in_flight=IN_FLIGHT, trials_as=mode, batch_size=11)
            sweep_plan = plan(config)
            assert sweep_plan.grid_size == IN_FLIGHT
            assert execute_plan(config, sweep_plan) == {"complete": IN_FLIGHT}
            pool = executor._pool
            assert pool is fresh and len(pool.actors) == 1
            threads[mode] = ray_local.get(pool.actors[0].trial_threads.remote())
    root = tmp_path / "wh"
    calls = run_sql(root, "select sum(model_calls) from trials where run_id = 'coroutines'"
                    ).rows[0][0]
    assert calls >= 3 * IN_FLIGHT  # several model calls a trial, each answered in 0.3 s
    assert [r[1:] for r in _rows(root, "coroutines")] == [r[1:] for r in _rows(root, "threads")]
    assert [r[0] for r in _rows(root, "coroutines")] == [r[0] for r in _rows(root, "threads")]
    # One after another, the calls would take calls x 0.3 s; together, about a trial's worth.
    (span,) = run_sql(root, "select epoch(max(finished_at)) - epoch(min(started_at)) "
                            "from trials where run_id = 'coroutines'").rows[0]
    assert span < calls * LATENCY_S / 8, span
    # none started by the coroutines; then the same worker started a thread a trial
    assert threads == {"coroutines": 0, "threads": IN_FLIGHT}
