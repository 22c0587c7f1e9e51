"""Workers write their parts (pipeline.execution.parts): final trials reach the warehouse
through parts the workers stage and the driver commits; a worker that dies holding finished
trials loses none of them and counts none twice."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE

from pipeline.execution import executor
from pipeline.execution.executor import ExecuteOptions, WorkerPool, execute
from pipeline.execution.outcome import Outcome
from pipeline.execution.parts import PartsConfig, WrittenPart
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.grid import TrialSpec
from pipeline.sweep.stages import BatchSink, plan
from pipeline.trial.run import RunContext
from warehouse.query import run_sql
from warehouse.writer import WarehouseWriter

RUN = "parts"
CTX = RunContext(run_id=RUN, code_version="test")


def _specs(root: Path, repeats: int) -> list[TrialSpec]:
    config = SweepConfig(suites=[MEETING_SUITE], memory_modes=["chat"], repeats=repeats,
                         run_id=RUN, warehouse=root)
    return [replace(s, deadline_s=30.0) for s in plan(config).pending]


def _run(ray: Any, root: Path, specs: list[TrialSpec], batch_size: int,
         on_outcome: Any = None) -> tuple[BatchSink, list[WrittenPart]]:
    sink = BatchSink(WarehouseWriter(root, RUN), batch_size=100)
    parts: list[WrittenPart] = []

    def commit(part: WrittenPart) -> None:
        parts.append(part)
        sink.commit(part)

    def outcome(seen: Outcome) -> None:
        sink.outcome(seen)
        if on_outcome is not None:
            on_outcome(seen)

    config = PartsConfig.for_root(root, RUN, batch_size, 3600.0,
                                  ray.get_runtime_context().get_node_id())
    options = ExecuteOptions(workers=1, parts=config, on_part=commit, on_outcome=outcome)
    execute(specs, CTX, sink, 4, options=options, on_attempt=sink.attempt)
    sink.flush()
    return sink, parts


def _once(root: Path, grid: int) -> None:
    assert run_sql(root, "SELECT count(*), count(DISTINCT trial_id) FROM trials_all").rows == [
        (grid, grid)]
    assert run_sql(root, "SELECT count(*) FROM trials t SEMI JOIN attempts a "
                         "USING (run_id, trial_id, attempt_id)").rows == [(grid,)]
    assert run_sql(root, "SELECT count(*) FROM (SELECT trial_id, attempt FROM attempts "
                         "GROUP BY ALL HAVING count(*) > 1)").rows == [(0,)]


def test_final_trials_arrive_as_parts_the_workers_wrote(ray_local: Any, tmp_path: Path) -> None:
    root = tmp_path / "wh"
    specs = _specs(root, repeats=1)
    sink, parts = _run(ray_local, root, specs, batch_size=4)
    assert sum(len(p.outcomes) for p in parts) == len(specs)  # none came back whole
    assert max(len(p.outcomes) for p in parts) == 4
    assert sink.statuses == {"complete": len(specs)}
    _once(root, len(specs))


def test_a_worker_dying_with_unwritten_trials_loses_none_and_counts_none_twice(
        ray_local: Any, tmp_path: Path) -> None:
    root = tmp_path / "wh"
    specs = _specs(root, repeats=1)
    seen: list[str] = []

    def kill_after_three(outcome: Outcome) -> None:
        seen.append(outcome.trial_id)
        if len(seen) == 3 and executor._pool is not None:  # it holds them, unwritten
            ray_local.kill(executor._pool.actors[0], no_restart=True)

    sink, parts = _run(ray_local, root, specs, batch_size=1000, on_outcome=kill_after_three)
    assert sink.statuses == {"complete": len(specs)}
    _once(root, len(specs))
    lost = run_sql(root, "SELECT trial_id FROM attempts WHERE outcome = 'incomplete' AND "
                         "message LIKE '%before the trial''s part was committed%'").rows
    assert {row[0] for row in lost} >= set(seen[:3])  # they ran again, their loss recorded


def test_a_lost_answer_gives_its_worker_up_and_counts_nothing_twice(
        ray_local: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A poll whose answer Ray lost may have named parts: the worker is stopped and replaced,
    its trials run again, and nothing it staged is committed afterwards."""
    root = tmp_path / "wh"
    specs = _specs(root, repeats=4)
    polls = 0
    real_poll = WorkerPool.poll

    @ray_local.remote
    def lost(answer: Any) -> None:  # the worker answered; the answer never arrives
        raise RuntimeError("the answer was lost")

    def losing(pool: WorkerPool, slot: int, plan_id: str) -> Any:
        nonlocal polls
        polls += 1
        ref = real_poll(pool, slot, plan_id)
        return lost.remote(ref) if polls == 3 else ref

    monkeypatch.setattr(WorkerPool, "poll", losing)
    sink, _ = _run(ray_local, root, specs, batch_size=1000)
    assert polls > 3
    assert sink.statuses == {"complete": len(specs)}
    _once(root, len(specs))
