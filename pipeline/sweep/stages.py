"""A sweep's stages as plain functions: plan, execute (Ray) into the warehouse, record, summarize.

The Prefect flow in flows/sweep.py only calls these, adding orchestration and observability.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from pipeline.catalog import Suite, bundled_suites, load_suites, set_extra_roots
from pipeline.execution.attempts import Attempt
from pipeline.execution.clock import REAL_TIME, Clock
from pipeline.execution.outcome import Outcome
from pipeline.execution.parts import WrittenPart
from pipeline.execution.shards import Shard
from pipeline.models.config import ModelConfig
from pipeline.models.routes import ModelRoute
from pipeline.runtime.phases import mark
from pipeline.sweep.config import SweepConfig, config_json, upgrade_recorded
from pipeline.sweep.done import NOTHING_DONE, done_trials
from pipeline.sweep.end_compaction import EndCompaction
from pipeline.sweep.grid import (
    TrialSpec,
    expand,
    grid_size,
)
from pipeline.sweep.landed_steps import LandedSteps
from pipeline.sweep.pending import PendingSpecs, expected_count
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
    pending: Sequence[TrialSpec]
    """The trials left to run, in the grid's order: from ``plan`` a lazy walk of the grid
    (pipeline.sweep.pending), so a night's plan holds no spec per trial."""
    models: tuple[ModelConfig, ...] = ()
    """The grid's agent models: whose routes and clients the execution prepares, known
    without walking ``pending``."""
    user_model: ModelConfig | None = None
    """The grid's user simulator model, if any."""
    elsewhere: int = 0
    """Trials of the grid in other shards' slices (``--shard``): not this driver's to run."""

    @property
    def skipped(self) -> int:
        """Trials of this driver's slice already final (a resume's, a shard's joining its
        run), not run again."""
        return self.grid_size - self.elsewhere - len(self.pending)

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
    compaction: EndCompaction | None = None
    """The run's compaction at its end (pipeline.sweep.end_compaction), if one was tried."""

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
    """The sweep's grid and what is left of it. Nothing is expanded here: ``pending`` walks the
    grid when iterated, skipping a resume's done trials (read once, compactly), so the first
    trial is dispatched before the grid has been walked."""
    suites = load_plan_suites(config)
    models = config.resolved_models()
    user_model = config.user_model.resolved() if config.user_model is not None else None
    agents = [resolve_agent(name) for name in config.agents]
    size = grid_size(suites, len(models), len(config.prompts), config.memory_modes,
                     config.repeats, agents)
    shard = config.shard
    # a shard joins a run its other shards may have started: it never runs a final trial again
    done = done_trials(config.warehouse, config.run_id) if _skips_final(config) else NOTHING_DONE
    skip: Container[str] = done if shard is None else _NotInSlice(shard, done)

    def walk() -> Iterator[TrialSpec]:
        return expand(suites, models, config.prompts, config.memory_modes, config.repeats,
                      config.step_limit, config.tools, user_model, config.user_max_turns,
                      agents, config.agent_turn_timeout_s, skip=skip,
                      deadline_s=config.trial_timeout_s)

    if shard is None:
        pending = PendingSpecs(walk, max(0, size - len(done)))
        return SweepPlan(config.run_id, suites, size, pending, tuple(models), user_model)
    counted = _SliceCount(shard, done)  # one walk of the grid's ids, no spec made
    for _ in expand(suites, models, config.prompts, config.memory_modes, config.repeats,
                    config.step_limit, config.tools, user_model, config.user_max_turns,
                    agents, config.agent_turn_timeout_s, skip=counted):
        pass
    pending = PendingSpecs(walk, counted.held - counted.final)
    return SweepPlan(config.run_id, suites, size, pending, tuple(models), user_model,
                     size - counted.held)


@dataclass(frozen=True)
class _NotInSlice:
    """The trials a shard's driver skips: those of the other shards' slices, and its own
    final ones."""

    shard: Shard
    done: Container[str]

    def __contains__(self, trial_id: object) -> bool:
        return not self.shard.holds(str(trial_id)) or trial_id in self.done


@dataclass
class _SliceCount:
    """Counts a shard's slice as ``expand`` asks of each grid trial whether to skip it (it
    always is: no spec is made): the trials the shard holds, and of those the final ones."""

    shard: Shard
    done: Container[str]
    held: int = 0
    final: int = 0

    def __contains__(self, trial_id: object) -> bool:
        if self.shard.holds(str(trial_id)):
            self.held += 1
            self.final += trial_id in self.done
        return True


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
    routes = _routes(sweep_plan)
    progress = SweepProgress(expected_count(sweep_plan.pending), f"run {sweep_plan.run_id}",
                             log=log)

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
        pool = sized_pool(ray, in_flight_limit(ray, config))
        if _calls_litellm(sweep_plan):
            pool.preload()
        yield


def in_flight_limit(ray: Any, config: SweepConfig) -> int:
    """The sweep's limit of trials in flight: ``in_flight_per_node`` for each node of the
    cluster now, else ``max_in_flight``."""
    if config.in_flight_per_node is None:
        return config.max_in_flight
    from pipeline.execution.executor import cluster_in_flight

    return cluster_in_flight(ray, config.in_flight_per_node)


def _calls_litellm(sweep_plan: SweepPlan) -> bool:
    """A trial of the plan calls a model through LiteLLM (not every one answers in process)."""
    from pipeline.models.providers import provider_for

    names = {model.name for model in _plan_models(sweep_plan)}
    return any(not provider_for(name).answers_in_process for name in names)


def _plan_models(sweep_plan: SweepPlan) -> list[ModelConfig]:
    """The models the plan's trials call, the agents' and the user simulator's: the grid's
    (a lazy plan is not walked for them), or those of a list of specs given."""
    if isinstance(sweep_plan.pending, PendingSpecs):
        user = [sweep_plan.user_model] if sweep_plan.user_model is not None else []
        return [*sweep_plan.models, *user]
    return [m for spec in sweep_plan.pending
            for m in (spec.model, *((spec.user_model,) if spec.user_model else ()))]


def _routes(sweep_plan: SweepPlan) -> dict[str, ModelRoute]:
    """The agents' models that have a route (a node service), by name."""
    models = (sweep_plan.models if isinstance(sweep_plan.pending, PendingSpecs)
              else [spec.model for spec in sweep_plan.pending])
    return {m.name: m.route for m in models if m.route}


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
    node_id = ray.get_runtime_context().get_node_id()
    parts = PartsConfig.for_root(config.warehouse, sweep_plan.run_id, config.batch_size,
                                 config.flush_interval_s, node_id)
    steps = LandedSteps(ray, config.warehouse, sweep_plan.run_id, node_id, say=_say_outage)

    def on_tick() -> None:
        sink.flush_if_due()
        steps.tick()  # compaction of what landed: a Ray task, never waited for here

    with NodeServices(ray, routes) as endpoints:
        options = ExecuteOptions(
            retry=config.retry, limits=limits_from(config.called_models()),
            faults=faults_from(config.called_models()),
            prior_attempts=attempt_counts(config.warehouse, sweep_plan.run_id,
                                          open_only=_skips_final(config)),
            endpoints=endpoints, on_outage=_say_outage, clock=clock, on_tick=on_tick,
            rates=rates_from(config.called_models()), spend=spend,
            parts=parts, on_part=sinks.on_part, on_outcome=sink.outcome,
            coroutines=config.trials_as == "coroutines")
        try:
            execute(specs, ctx, sink, in_flight_limit(ray, config), options=options,
                    on_attempt=sinks.on_attempt)
        finally:
            sink.flush()
        steps.drain()  # the run's compaction comes next
    line = spend.reached() if spend is not None else None
    if spend is not None and line is not None and spend.not_started:
        raise SpendCapReached(f"{line}; {spend.not_started} trial(s) not started",
                              dict(sink.statuses))


def _skips_final(config: SweepConfig) -> bool:
    """The plan skips the run's final trials (a resume, a shard joining its run), so the
    driver needs the attempt counts of the others only, not one per trial of the run."""
    return config.resume or config.shard is not None


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
