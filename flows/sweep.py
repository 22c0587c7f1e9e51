"""The sweep flow: plan -> execute on Ray -> record the run -> compact -> summarize, as Prefect
tasks.

Trials are not Prefect tasks (see STACK-NOTES.md): Prefect orchestrates the stages of the
sweep and Ray schedules the trials inside the execute stage. Every door runs a sweep the same
way: ``prepare`` (pipeline.sweep.prepare) checks it, then ``run_sweep`` takes the run lock and
starts this flow, named after the run id and tagged with the kind of run, its suites and models;
progress goes to the flow run's log (``prefect flow-run logs``, the UI).
"""

from __future__ import annotations

import logging
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import Any, Literal, cast

from prefect import flow, get_run_logger, tags, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State
from prefect.utilities.annotations import quote

from pipeline.catalog.loader import bundled_suites
from pipeline.execution.head import RayHeadLost
from pipeline.execution.lease import LeaseLost
from pipeline.execution.runlock import RunLocked, run_guard
from pipeline.runtime import prefect_api, stack
from pipeline.runtime.flow_runs import interrupted_state, outcome_of
from pipeline.runtime.phases import mark
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.end_compaction import EndCompaction, compact_at_end
from pipeline.sweep.handoff import Handed
from pipeline.sweep.preflight import refuse_existing
from pipeline.sweep.prepare import PreparedSweep
from pipeline.sweep.spend_cap import SpendCapReached
from pipeline.sweep.stages import (
    Stop,
    SweepOutcome,
    SweepPlan,
    execute_plan,
    new_invocation_id,
    plan,
    ray_connected,
    record_run,
    services_ahead,
    summarize,
)
from pipeline.trial.spec import AgentRef
from warehouse.diskspace import DiskFull
from warehouse.store_retry import ObjectStoreUnavailable

RunKind = Literal["adhoc", "nightly", "model-swap"]
"""Which door started the sweep: ``agentsweep run``, the nightly flow, the model-swap flow."""


def tags_of(config: SweepConfig, kind: RunKind) -> list[str]:
    """The flow run's tags: the kind of run, each suite (the default run's: the bundled
    default suites), each model and each external agent (a file agent by its file's name)."""
    suites = [f"suite:{suite.stem}" for suite in config.suites or bundled_suites()]
    agents = [f"agent:{AgentRef(name).identity}" for name in config.agents
              if not AgentRef(name).builtin]
    return ["agentsweep", kind, *suites, *(f"model:{m}" for m in config.model_names()),
            *agents]


def run_sweep(prepared: PreparedSweep, kind: RunKind) -> SweepOutcome:
    """The prepared sweep as a flow run named after its run id, under the run lock (a second
    driver of the same run id, or of the same shard, is refused; ``RunLocked``). A shard's
    driver compacts the run after it let its shard go, if no other driver runs the run then
    (the last shard to end does), on the Ray the sweep ran on."""
    config = prepared.config
    with ExitStack() as ray_kept:
        with run_guard(config.run_id, config.warehouse, shard=config.shard):
            refuse_existing(config, prepared.append)  # again: another driver may just have run it
            ray_kept.enter_context(services_ahead(config, prepared.plan))
            try:
                with tags(*tags_of(config, kind)):
                    run_api = prefect_api.current()
                    if run_api is not None:  # started early (pipeline.runtime.prefect_api)
                        run_api.ready()
                    state = sweep_flow.with_options(flow_run_name=flow_run_name(config))(
                        config, Handed.of(config, prepared.plan), return_state=True)
                    outcome = cast(SweepOutcome, outcome_of(state))
            except BaseException:
                ray_kept.close()  # its workers stop before the run's lock is given back
                raise
        if config.shard is not None and (outcome.stopped is None
                                         or not outcome.stopped.lost_work):
            outcome.compaction = compact_if_alone(config)
    return outcome


def flow_run_name(config: SweepConfig) -> str:
    """The run id, and the shard a driver runs (``R-shard-1-of-2``)."""
    return config.run_id if config.shard is None else f"{config.run_id}-shard-{config.shard.label}"


def compact_if_alone(config: SweepConfig) -> EndCompaction | None:
    """The run compacted under its whole lock, unless another driver still runs a shard of it
    (then that driver compacts it when it ends)."""
    logger = logging.getLogger(__name__)
    try:
        with run_guard(config.run_id, config.warehouse):
            ended = compact_at_end(config.warehouse, config.run_id, _connected_ray())
    except RunLocked as exc:
        logger.info("run %s is compacted by its last driver: %s", config.run_id, exc)
        return None
    except (ObjectStoreUnavailable, OSError) as exc:  # its lock could not be taken
        logger.warning("the run was not compacted: %s", str(exc).strip().split("\n")[0])
        return None
    _say_compaction(ended, logger)
    return ended


def _connected_ray() -> Any | None:
    """The Ray this driver is connected to (the sweep's), or None."""
    if not ray_connected():
        return None
    import ray

    return ray


def _say_compaction(ended: EndCompaction, logger: logging.Logger | logging.LoggerAdapter[Any]
                    ) -> None:
    if ended.failed is not None:
        # the run is whole without it; a later compaction finishes it
        logger.warning("the run was not compacted: %s", ended.failed)
    if ended.handed_back is not None:
        logger.info("run %s was compacted by its driver: %s", ended.run_id, ended.handed_back)


@task(name="plan", cache_policy=NO_CACHE)
def plan_task(config: SweepConfig, handed: Handed[SweepPlan] | None) -> SweepPlan:
    """The plan ``prepare`` computed for this config and handed to the flow run, else a new
    one (a flow run started with a config alone)."""
    found = handed.for_config(config) if handed is not None else None
    return found if found is not None else plan(config)


@task(name="execute", cache_policy=NO_CACHE)
def execute_task(config: SweepConfig, sweep_plan: SweepPlan) -> tuple[dict[str, int], Stop | None]:
    """The final statuses, or none and why the sweep stopped early (a full disk, a lost Ray
    head: what was written stays, the rest runs again on resume)."""
    logger = get_run_logger()
    # Progress lines are the flow run's news at INFO, whatever the level of Prefect's own logs
    # (PREFECT_LOGGING_LEVEL, WARNING by default): `prefect flow-run logs` and the UI show them.
    logger.setLevel(logging.INFO)
    try:
        return execute_plan(config, sweep_plan, log=logger.info), None
    except DiskFull as exc:
        return {}, Stop(str(exc), "Free some space")
    except ObjectStoreUnavailable as exc:
        return {}, _store_stop(exc)
    except LeaseLost as exc:  # an outage longer than the lease: another driver may hold it
        return {}, Stop(str(exc), "Make sure no other driver runs it (agentsweep runs; the "
                        "lease expires after AGENTSWEEP_LEASE_SECONDS)")
    except SpendCapReached as exc:
        return exc.statuses, Stop(str(exc), "Raise the cap (--max-cost-usd, or max_cost_usd in "
                                  "the spec)",
                                  lost_work=False)
    except RayHeadLost as exc:
        return {}, Stop(f"{exc}; trials in flight were lost, every finished one is saved",
                        _restart_ray(config))


def _store_stop(exc: ObjectStoreUnavailable, lost_work: bool = True) -> Stop:
    """The warehouse's object store away past the retry bound: nothing more can be written
    or read (no summary either)."""
    return Stop(str(exc), f"Bring object storage at {exc.endpoint} back", lost_work=lost_work,
                readable=False)


def _restart_ray(config: SweepConfig) -> str:
    """How to get a Ray again: the warm stack restarts with ``agentsweep up``; a local Ray
    starts with the run; a cluster is the user's."""
    state = stack.read_state()
    if config.ray_address is None:
        return "Nothing to restart: the resume starts a local Ray"
    if state is not None and state.ray_address == config.ray_address:
        return "Start the stack again (agentsweep up)"
    return f"Bring the Ray cluster at {config.ray_address} back"


@task(name="record-run", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=1)
def record_task(config: SweepConfig, sweep_plan: SweepPlan, started_at: datetime,
                executed: int | None, invocation_id: str) -> None:
    record_run(config, sweep_plan, started_at, executed, invocation_id)


@task(name="compact", cache_policy=NO_CACHE)
def compact_task(config: SweepConfig, run_id: str) -> EndCompaction:
    """The run's part files rewritten as a few large sorted ones (warehouse.compact), in a Ray
    task beside the driver (pipeline.sweep.end_compaction); the run lock is held by
    ``run_sweep``. A resume adds new parts beside the compacted files."""
    ended = compact_at_end(config.warehouse, run_id, _connected_ray())
    _say_compaction(ended, get_run_logger())
    return ended


@task(name="summarize", cache_policy=NO_CACHE)
def summarize_task(config: SweepConfig, run_id: str) -> tuple[list[str], list[tuple[object, ...]]]:
    return summarize(config.warehouse, run_id)


@flow(name="agentsweep-sweep", log_prints=False, validate_parameters=False)
def sweep_flow(config: SweepConfig, handed: Handed[SweepPlan] | None = None
               ) -> SweepOutcome | State[Any]:
    """The sweep of ``config``, on the plan ``handed`` for it (Prefect stores its run id, not
    the plan) else a new one; Ctrl-C or SIGTERM ends the flow run Cancelled (``run_sweep`` then
    raises KeyboardInterrupt in its caller, which says how to resume)."""
    try:
        return _sweep(config, handed)
    except KeyboardInterrupt:
        return interrupted_state(f"run {config.run_id}: what finished is saved; continue with "
                                 f"agentsweep run --run-id {config.run_id} --resume")


def _sweep(config: SweepConfig, handed: Handed[SweepPlan] | None) -> SweepOutcome:
    mark("planning")
    started_at = datetime.now(UTC)
    sweep_plan = plan_task(config, handed)
    # quote(): Prefect would otherwise walk every TrialSpec of the plan looking for futures
    # (about 14 s for a 100k-trial plan); the task gets the plan itself.
    quoted = cast(SweepPlan, quote(sweep_plan))  # the task receives the unwrapped plan
    invocation = new_invocation_id()
    record_task(config, quoted, started_at, None, invocation)
    statuses, stopped = execute_task(config, quoted)
    executed = sum(statuses.values())
    columns: list[str] = []
    rows: list[tuple[object, ...]] = []
    compaction: EndCompaction | None = None
    try:
        # A full disk has no room for the finish record, nor a lost run; a spend cap has both.
        if stopped is None or not stopped.lost_work:
            record_task(config, quoted, started_at, executed, invocation)
            if config.shard is None:  # a shard's: after its lock is given back (run_sweep)
                compaction = compact_task(config, sweep_plan.run_id)
        if stopped is None or stopped.readable:
            columns, rows = summarize_task(config, sweep_plan.run_id)
    except ObjectStoreUnavailable as exc:  # every trial is written; the finish record is not
        stopped = _store_stop(exc, lost_work=False)
    return SweepOutcome(sweep_plan.run_id, sweep_plan.grid_size, executed, sweep_plan.skipped,
                        statuses, columns, rows, stopped, sweep_plan.elsewhere, compaction)
