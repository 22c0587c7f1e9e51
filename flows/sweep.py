"""The sweep flow: plan -> execute on Ray -> record the run -> summarize, as Prefect tasks.

Trials are not Prefect tasks (see STACK-NOTES.md): Prefect orchestrates the stages of the
sweep and Ray schedules the trials inside the execute stage.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import cast

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from pipeline.runtime.phases import mark
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.stages import (
    SweepOutcome,
    SweepPlan,
    execute_plan,
    new_invocation_id,
    plan,
    record_run,
    summarize,
)
from warehouse.diskspace import DiskFull


@task(name="plan", cache_policy=NO_CACHE)
def plan_task(config: SweepConfig) -> SweepPlan:
    return plan(config)


@task(name="execute", cache_policy=NO_CACHE)
def execute_task(config: SweepConfig, sweep_plan: SweepPlan) -> tuple[dict[str, int], str | None]:
    """The final statuses, or none and why the sweep stopped early (a full disk: what was
    written stays, the unwritten batch runs again on resume)."""
    try:
        return execute_plan(config, sweep_plan), None
    except DiskFull as exc:
        return {}, str(exc)


@task(name="record-run", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=1)
def record_task(config: SweepConfig, sweep_plan: SweepPlan, started_at: datetime,
                executed: int | None, invocation_id: str) -> None:
    record_run(config, sweep_plan, started_at, executed, invocation_id)


@task(name="summarize", cache_policy=NO_CACHE)
def summarize_task(config: SweepConfig, run_id: str) -> tuple[list[str], list[tuple[object, ...]]]:
    return summarize(config.warehouse, run_id)


@flow(name="agentsweep-sweep", log_prints=False, validate_parameters=False)
def sweep_flow(config: SweepConfig) -> SweepOutcome:
    mark("planning")
    started_at = datetime.now(UTC)
    sweep_plan = plan_task(config)
    # quote(): Prefect would otherwise walk every TrialSpec of the plan looking for futures
    # (about 14 s for a 100k-trial plan); the task gets the plan itself.
    quoted = cast(SweepPlan, quote(sweep_plan))  # the task receives the unwrapped plan
    invocation = new_invocation_id()
    record_task(config, quoted, started_at, None, invocation)
    statuses, stopped = execute_task(config, quoted)
    executed = sum(statuses.values())
    if stopped is None:  # a full disk has no room for the finish record
        record_task(config, quoted, started_at, executed, invocation)
    columns, rows = summarize_task(config, sweep_plan.run_id)
    return SweepOutcome(sweep_plan.run_id, sweep_plan.grid_size, executed, sweep_plan.skipped,
                        statuses, columns, rows, stopped)
