"""A sweep's stages as plain functions: plan, execute (Ray) into the warehouse, record, summarize.

The Prefect flow in flows/sweep.py only calls these, adding orchestration and observability.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from pipeline.catalog import Suite, bundled_suites, load_suites, set_extra_roots
from pipeline.execution.attempts import Attempt
from pipeline.execution.clock import REAL_TIME, Clock
from pipeline.execution.outcome import Outcome
from pipeline.execution.parts import WrittenPart
from pipeline.models.routes import ModelRoute
from pipeline.runtime.phases import mark
from pipeline.sweep.config import SweepConfig, config_json, upgrade_recorded
from pipeline.sweep.grid import (
    TrialSpec,
    expand,
    grid_size,
)
from pipeline.trial.external.refs import resolve as resolve_agent
from pipeline.trial.run import RunContext, TrialResult, tables_of
from pipeline.util.redact import redact
from pipeline.util.version import code_version
from warehouse.location import Root
from warehouse.query import run_named
from warehouse.rows import RunRow
from warehouse.staged import commit_staged
from warehouse.writer import WarehouseWriter


@dataclass(frozen=True)
class SweepPlan:
    run_id: str
    suites: list[Suite]
    grid_size: int
    pending: list[TrialSpec]
    skipped: int
    """Trials of this driver's slice already final (a resume's)."""
    elsewhere: int = 0
    """Trials of the grid in other shards' slices (``--shard``): not this driver's to run."""


@dataclass(frozen=True)
class Stop:
    """Why a sweep stopped before its grid was done; what it had written stays, and a resume
    runs the rest."""

    reason: str
    """What happened: ``no space left on ...``, ``the Ray head at ... stopped answering``."""
    remedy: str
    """What to do before resuming."""
    lost_work: bool = True
    """Trials in flight (or unwritten) were lost; False: the sweep stopped starting trials and
    what ran is all written (a spend cap), so the run is recorded as finished."""
    readable: bool = True
    """The warehouse can still be read (False: its object store is away): the summary and the
    reasons are left out."""


@dataclass
class SweepOutcome:
    run_id: str
    grid_size: int
    executed: int
    skipped: int
    statuses: dict[str, int] = field(default_factory=dict)
    summary_columns: list[str] = field(default_factory=list)
    summary_rows: list[tuple[Any, ...]] = field(default_factory=list)
    stopped: Stop | None = None
    """Why the sweep stopped before its grid was done (a full disk, a lost Ray head)."""
    elsewhere: int = 0
    """Trials of the grid in other shards' slices (``--shard``)."""

    @property
    def incomplete(self) -> int:
        """Trials still without a final outcome (infrastructure failures after every retry)."""
        return self.statuses.get("incomplete", 0)


def load_plan_suites(config: SweepConfig) -> list[Suite]:
    """Load and validate every suite, keeping only ``config.scenarios`` when set; raises
    CatalogError (ValueError for an id no suite has) before anything runs."""
    set_extra_roots(config.catalogs)
    suites = load_suites(config.suites or bundled_suites())
    if not config.scenarios:
        return suites
    wanted = set(config.scenarios)
    known = {loaded.scenario.id for suite in suites for loaded in suite.scenarios}
    missing = sorted(wanted - known)
    if missing:
        raise ValueError(f"scenarios: {', '.join(missing)} in none of the suites "
                         f"(known: {', '.join(sorted(known))})")
    return [replace(suite, scenarios=tuple(s for s in suite.scenarios
                                           if s.scenario.id in wanted))
            for suite in suites if any(s.scenario.id in wanted for s in suite.scenarios)]


def plan(config: SweepConfig) -> SweepPlan:
    suites = load_plan_suites(config)
    models = config.resolved_models()
    user_model = config.user_model.resolved() if config.user_model is not None else None
    agents = [resolve_agent(name) for name in config.agents]
    specs = list(expand(suites, models, config.prompts, config.memory_modes, config.repeats,
                        config.step_limit, config.tools, user_model, config.user_max_turns,
                        agents, config.agent_turn_timeout_s))
    size = grid_size(suites, len(models), len(config.prompts), config.memory_modes,
                     config.repeats, agents)
    shard = config.shard
    mine = specs if shard is None else [s for s in specs if shard.holds(s.trial_id)]
    # a shard joins a run its other shards may have started: it never runs a final trial again
    joins = config.resume or shard is not None
    done = final_trial_ids(config.warehouse, config.run_id) if joins else set()
    pending = [replace(s, deadline_s=config.trial_timeout_s) for s in mine
               if s.trial_id not in done]
    return SweepPlan(config.run_id, suites, size, pending, len(mine) - len(pending),
                     len(specs) - len(mine))


def final_trial_ids(root: Root, run_id: str) -> set[str]:
    """Trials of a run that already have a final outcome (anything but incomplete)."""
    result = run_named(root, "final_trial_ids", {"run_id": run_id})
    return {row[0] for row in result.rows}


class BatchSink:
    """Collects attempts and final trial results; writes them to the warehouse in batches, and
    commits the parts the workers wrote themselves (``commit``).

    A batch is written when ``batch_size`` final trials are pending, when ``flush_interval_s``
    has passed since the last write (the executor ticks about every second, so a finished
    trial waits seconds, whatever else happens: a crash loses only the trials in flight), and
    at the end.
    A batch is one ``write_batch`` (trials file last, rolled back if any file fails): a trial
    row is the commit marker, so only a kill mid-batch can leave attempts of trials that a
    resume runs again (their numbering continues), never a trial without its attempt.

    Most final trials never reach the sink whole: their worker writes them as a part
    (pipeline.execution.parts) and the sink only commits it. What comes here is what the
    driver settled itself: retried attempts, and final trials whose last attempt failed in
    the infrastructure (or ran on a node that cannot reach a local warehouse's disk).
    """

    def __init__(self, writer: WarehouseWriter, batch_size: int,
                 on_trial: Callable[[str], None] | None = None,
                 flush_interval_s: float = 5.0) -> None:
        self.writer = writer
        self.batch_size = batch_size
        self.on_trial = on_trial
        self.flush_interval_s = flush_interval_s
        self.statuses: dict[str, int] = {}
        self.attempts = 0
        self._pending: list[TrialResult] = []
        self._attempt_rows: list[dict[str, Any]] = []
        self._last_flush = time.monotonic()

    def __call__(self, result: TrialResult) -> None:
        """A trial's final result (its last attempt)."""
        self.statuses[result.status] = self.statuses.get(result.status, 0) + 1
        self._pending.append(result)
        if self.on_trial is not None:
            self.on_trial(result.trial.trial_id)
        self.flush_if_due()

    def outcome(self, outcome: Outcome) -> None:
        """A final trial its worker keeps for a part (not committed yet)."""
        if self.on_trial is not None:
            self.on_trial(outcome.trial_id)

    def commit(self, part: WrittenPart) -> None:
        """Make a part a worker staged visible; its trials are final from here on."""
        commit_staged(self.writer.root, part.batch)
        for outcome in part.outcomes:
            self.statuses[outcome.status] = self.statuses.get(outcome.status, 0) + 1

    def attempt(self, attempt: Attempt) -> None:
        """Any finished attempt, retried or final."""
        self.attempts += 1
        self._attempt_rows.append(attempt.row().as_dict())
        self.flush_if_due()

    def flush_if_due(self) -> None:
        """A batch if enough rows are pending or the interval has passed."""
        if (len(self._pending) >= self.batch_size
                or len(self._attempt_rows) >= 4 * self.batch_size
                or time.monotonic() - self._last_flush >= self.flush_interval_s):
            self.flush()

    def flush(self) -> None:
        """One batch: its attempts, events and checks, then its trials (the commit marker),
        all or nothing. On failure (a full disk) the rows stay pending and the error rises."""
        self._last_flush = time.monotonic()
        if not self._attempt_rows and not self._pending:
            return
        self.writer.write_batch({"attempts": self._attempt_rows, **tables_of(self._pending)})
        self._attempt_rows = []
        self._pending = []


def execute_plan(config: SweepConfig, sweep_plan: SweepPlan,
                 on_trial: Callable[[str], None] | None = None,
                 log: Callable[[str], None] | None = None,
                 clock: Clock = REAL_TIME) -> dict[str, int]:
    """Run the plan's pending trials on Ray, retrying infrastructure failures; returns the
    final statuses. Limits, faults and api_base come from ``config.models``; ``log`` gets
    progress lines (trials done, failed, incomplete, ETA); ``on_trial`` the id of each trial
    that finished (before its rows are committed)."""
    from pipeline.execution.executor import ray_session
    from pipeline.models.call_params import call_params_from
    from pipeline.sweep.grid import with_call_params
    from pipeline.sweep.progress import SweepProgress

    writer = WarehouseWriter(config.warehouse, sweep_plan.run_id)
    sink = BatchSink(writer, config.batch_size, on_trial, config.flush_interval_s)
    ctx = RunContext(sweep_plan.run_id, code_version())
    if not sweep_plan.pending:
        return sink.statuses
    specs = with_call_params(sweep_plan.pending, call_params_from(config.called_models()))
    routes = {s.model.name: s.model.route for s in sweep_plan.pending if s.model.route}
    progress = SweepProgress(len(sweep_plan.pending), f"run {sweep_plan.run_id}", log=log)

    def on_attempt(attempt: Attempt) -> None:
        sink.attempt(attempt)
        progress.attempt(attempt)

    def on_part(part: WrittenPart) -> None:
        sink.commit(part)
        progress.committed(part.outcomes)

    with progress:
        if not ray_connected():
            mark("connecting to Ray" if config.ray_address else "starting a local Ray")
        with ray_session(config.ray_address) as ray:
            _execute_on(ray, config, routes, specs, ctx, _Sinks(sink, on_attempt, on_part),
                        sweep_plan, clock)
    return sink.statuses


@dataclass(frozen=True)
class _Sinks:
    """Where an execution's results go: the sink, and the callbacks that also tell progress."""

    sink: BatchSink
    on_attempt: Callable[[Attempt], None]
    on_part: Callable[[WrittenPart], None]


def ray_connected(modules: Mapping[str, Any] = sys.modules) -> bool:
    """This process is connected to a Ray already (``services_ahead``, or a caller's own
    ``ray.init``). A local Ray starting early imports ``ray`` in another thread: a module still
    half imported has no ``is_initialized`` yet, and nothing has joined it. ``modules``: where
    imported modules are found (``sys.modules``)."""
    from pipeline.execution.executor import session_open

    is_initialized = getattr(modules.get("ray"), "is_initialized", None)
    return session_open() or (is_initialized is not None and bool(is_initialized()))


@contextmanager
def services_ahead(config: SweepConfig, sweep_plan: SweepPlan) -> Iterator[None]:
    """Ray and the trial workers started before the flow, for a sweep with trials to run: a
    local Ray starts, and the workers import their code, while Prefect's API and flow start
    (on the other core) instead of after them. ``execute_plan`` finds the session connected and
    the pool started; both end here, after the flow."""
    if not sweep_plan.pending or ray_connected():
        yield
        return
    from pipeline.execution.executor import ray_session, sized_pool

    mark("connecting to Ray" if config.ray_address else "starting a local Ray")
    with ray_session(config.ray_address) as ray:
        mark("starting workers")
        pool = sized_pool(ray, config.max_in_flight)
        if _calls_litellm(sweep_plan):
            pool.preload()
        yield


def _calls_litellm(sweep_plan: SweepPlan) -> bool:
    """A trial of the plan calls a model through LiteLLM (not every one answers in process)."""
    from pipeline.models.providers import provider_for

    names = {spec.model.name for spec in sweep_plan.pending}
    names |= {spec.user_model.name for spec in sweep_plan.pending if spec.user_model}
    return any(not provider_for(name).answers_in_process for name in names)


def _execute_on(ray: Any, config: SweepConfig, routes: dict[str, ModelRoute],
                specs: Iterable[TrialSpec], ctx: RunContext, sinks: _Sinks,
                sweep_plan: SweepPlan, clock: Clock) -> None:
    from pipeline.execution.attempts import attempt_counts
    from pipeline.execution.concurrency import limits_from
    from pipeline.execution.executor import ExecuteOptions, execute
    from pipeline.execution.parts import PartsConfig
    from pipeline.execution.rate_limits import rates_from
    from pipeline.execution.services import NodeServices
    from pipeline.models.call_params import faults_from
    from pipeline.sweep.spend_cap import SpendCapReached, spend_book

    if any(r.node_service for r in routes.values()):
        mark("starting model servers on the nodes")
    spend = spend_book(config, sweep_plan.run_id, on_reached=_say_outage)
    sink = sinks.sink
    parts = PartsConfig.for_root(config.warehouse, sweep_plan.run_id, config.batch_size,
                                 config.flush_interval_s,
                                 ray.get_runtime_context().get_node_id())
    with NodeServices(ray, routes) as endpoints:
        options = ExecuteOptions(
            retry=config.retry, limits=limits_from(config.called_models()),
            faults=faults_from(config.called_models()),
            prior_attempts=attempt_counts(config.warehouse, sweep_plan.run_id),
            endpoints=endpoints, on_outage=_say_outage, clock=clock, on_tick=sink.flush_if_due,
            rates=rates_from(config.called_models()), spend=spend,
            parts=parts, on_part=sinks.on_part, on_outcome=sink.outcome)
        try:
            execute(specs, ctx, sink, config.max_in_flight, options=options,
                    on_attempt=sinks.on_attempt)
        finally:
            sink.flush()
    line = spend.reached() if spend is not None else None
    if spend is not None and line is not None and spend.not_started:
        raise SpendCapReached(f"{line}; {spend.not_started} trial(s) not started",
                              dict(sink.statuses))


def new_invocation_id() -> str:
    return secrets.token_hex(8)


def _say_outage(text: str) -> None:
    """A provider went down or came back: on the progress line, and on stderr for logs."""
    mark(text)
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def record_run(config: SweepConfig, sweep_plan: SweepPlan, started_at: datetime,
               executed: int | None, invocation_id: str) -> None:
    """The invocation's ``runs`` row: at its start (``executed`` None, no finish time: a run
    that never finishes keeps only this one) and again when it finishes."""
    writer = WarehouseWriter(config.warehouse, sweep_plan.run_id)
    row = RunRow(
        run_id=sweep_plan.run_id,
        invocation_id=invocation_id,
        started_at=started_at,
        finished_at=None if executed is None else datetime.now(UTC),
        code_version=code_version(),
        suite_ids=[s.id for s in sweep_plan.suites],
        suite_sha256s=[s.sha256 for s in sweep_plan.suites],
        models=config.model_names(),
        memory_modes=list(config.memory_modes),
        repeats=config.repeats,
        grid_size=sweep_plan.grid_size,
        trials_run=executed or 0,
        ray_address=config.ray_address,
        argv=redact(" ".join(sys.argv)),
        config_json=config_json(config),
    )
    writer.write_batch({"runs": [row.as_dict()]})


def recorded_config(root: Root, run_id: str) -> dict[str, Any] | None:
    """The grid options the run was started with (its latest invocation), or None."""
    rows = run_named(root, "run_config", {"run_id": run_id}).rows
    if not rows or rows[0][0] is None:
        return None
    value: dict[str, Any] = json.loads(str(rows[0][0]))
    return upgrade_recorded(value)


def run_exists(root: Root, run_id: str) -> bool:
    """Any row of the run, finished or not (its attempts count)."""
    return bool(run_named(root, "run_exists", {"run_id": run_id}).rows[0][0])


def summarize(root: Root, run_id: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    result = run_named(root, "summary", {"run_id": run_id})
    return result.columns, result.rows
