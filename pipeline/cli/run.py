"""``agentsweep run``: options -> a checked SweepConfig -> the Prefect flow -> what happened.

Every mistake in the options or the catalogs is found before the first trial (``BadInput``,
exit 2, one line naming the option or the file and field); a run id that exists is continued
only with ``--resume`` (``--resume --run-id R`` alone reuses R's recorded grid) or extended with
``--append``; Ctrl-C stops with one line and the resume command.
"""

from __future__ import annotations

import logging
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from rich.console import Console
from rich.text import Text

from pipeline.errors import ExitCode
from pipeline.runtime import hygiene
from pipeline.runtime.logs import keep_run_logs_off_the_terminal
from pipeline.runtime.phases import mark
from pipeline.runtime.probe import prefect_lost_line
from pipeline.runtime.startup import start_failure_line
from pipeline.sweep.preflight import BadInput, option_error
from pipeline.sweep.prepare import PreparedSweep, prepare
from warehouse.location import Root
from warehouse.store_retry import ObjectStoreUnavailable

if TYPE_CHECKING:
    from pipeline.models.config import ModelConfig
    from pipeline.sweep.config import SweepConfig
    from pipeline.sweep.stages import SweepOutcome



@dataclass(frozen=True)
class RunOptions:
    """The command line of ``agentsweep run``, as given (None / empty: not given)."""

    suite: list[Path] = field(default_factory=list)
    catalog: list[Path] = field(default_factory=list)
    scenario: list[str] = field(default_factory=list)
    model: list[str] = field(default_factory=list)
    prompt: list[str] = field(default_factory=list)
    memory_mode: list[str] = field(default_factory=list)
    agent: list[str] = field(default_factory=list)
    agent_turn_timeout_s: float | None = None
    repeats: int | None = None
    tools: str | None = None
    user_model: str | None = None
    """The user simulator's model (scenarios with a simulated user)."""
    user_max_turns: int | None = None
    api_base: str | None = None
    temperature: float | None = None
    seed: int | None = None
    run_id: str | None = None
    resume: bool = False
    shard: str | None = None
    """``I/N``: shard I of N drivers of the run (checked by SweepConfig, naming --shard)."""
    ray_address: str | None = None
    max_in_flight: int | None = None
    in_flight_per_node: int | None = None
    trials_as: str | None = None
    timeout_s: float | None = None
    spec: Path | None = None
    append: bool = False
    junit: Path | None = None
    """Write the run's JUnit XML here when the sweep ends (whatever its exit code)."""
    max_cost_usd: float | None = None
    """The sweep's spend cap; wins over a spec's and over the one a resumed run recorded."""

    def grid_given(self) -> bool:
        grid = (self.suite, self.catalog, self.scenario, self.model, self.prompt,
                self.memory_mode, self.temperature, self.seed, self.max_in_flight,
                self.in_flight_per_node, self.trials_as,
                self.api_base, self.timeout_s, self.tools, self.user_model,
                self.user_max_turns, self.agent, self.agent_turn_timeout_s)
        return any(v not in (None, []) for v in grid)


def build_config(options: RunOptions) -> SweepConfig:
    """The SweepConfig the options describe; BadInput for a mistake."""
    from pipeline.catalog import CatalogError
    from pipeline.sweep.config import SweepConfig

    if options.resume and not options.run_id and options.spec is None:
        raise BadInput("--resume needs --run-id")
    if options.resume and options.append:
        raise BadInput("--resume continues a run's own grid; --append adds another: choose one")
    if options.spec is not None and options.grid_given():
        raise BadInput("--spec: set suites, scenarios, models, prompts, memory modes, "
                       "temperature, seed, tools and max in flight in the spec (only --run-id, "
                       "--resume, --shard, --ray-address, --repeats, --max-cost-usd override "
                       "it)")
    if options.max_in_flight is not None and options.in_flight_per_node is not None:
        raise BadInput("--in-flight-per-node replaces --max-in-flight: give one of them")
    if options.shard is not None and not (options.run_id or options.spec is not None):
        raise BadInput(f"--shard {options.shard}: the drivers of a run's shards share its "
                       "run id: give --run-id too")
    try:
        if options.spec is not None:
            return _from_spec(options)
        args = _grid_args(options)
        if options.resume and not options.grid_given() and options.repeats is None:
            args.update(_recorded_grid(str(options.run_id)))
        if options.max_cost_usd is not None:
            args["max_cost_usd"] = options.max_cost_usd
        if options.shard is not None:
            args["shard"] = options.shard
        return SweepConfig(**args)
    except ValidationError as exc:
        raise BadInput(option_error(exc)) from None
    except CatalogError as exc:  # a spec file's mistake: file:line: field: message
        raise BadInput(str(exc)) from None


def _grid_args(options: RunOptions) -> dict[str, Any]:
    args: dict[str, Any] = {"suites": options.suite, "resume": options.resume,
                            "ray_address": options.ray_address,
                            "warehouse": hygiene.warehouse_root(),
                            "models": _models(options)}
    for key, value in (("scenarios", options.scenario),
                       ("prompts", options.prompt), ("memory_modes", options.memory_mode),
                       ("catalogs", [c.resolve() for c in options.catalog]),
                       ("run_id", options.run_id), ("repeats", options.repeats),
                       ("max_in_flight", options.max_in_flight),
                       ("in_flight_per_node", options.in_flight_per_node),
                       ("trials_as", options.trials_as),
                       ("tools", options.tools),
                       ("user_model", options.user_model),
                       ("user_max_turns", options.user_max_turns),
                       ("agents", options.agent),
                       ("agent_turn_timeout_s", options.agent_turn_timeout_s)):
        if value not in (None, []):
            args[key] = value
    return args


def _models(options: RunOptions) -> list[ModelConfig]:
    """One ModelConfig per ``--model``, each with the options that apply to every model
    (``--temperature``, ``--seed``, ``--api-base``, ``--timeout-s``). A ValidationError names
    the option (its field is the option's name)."""
    from pipeline.models.config import ModelConfig
    from pipeline.sweep.grid import DEFAULT_MODEL

    given = {key: value for key, value in (
        ("temperature", options.temperature), ("seed", options.seed),
        ("api_base", options.api_base), ("timeout_s", options.timeout_s)) if value is not None}
    return [ModelConfig(name, **given) for name in options.model or [DEFAULT_MODEL]]


def _from_spec(options: RunOptions) -> SweepConfig:
    from pipeline.sweep.spec import load_spec

    assert options.spec is not None
    config = load_spec(options.spec, hygiene.warehouse_root(), {
        "run_id": options.run_id, "resume": options.resume or None,
        "ray_address": options.ray_address, "repeats": options.repeats,
        "max_cost_usd": options.max_cost_usd, "shard": options.shard})
    if config.resume and "run_id" not in config.model_fields_set:
        raise BadInput("--resume needs --run-id (or run_id in the spec)")
    if config.shard is not None and "run_id" not in config.model_fields_set:
        raise BadInput(f"--shard {config.shard}: the drivers of a run's shards share its run "
                       "id: give --run-id too (or run_id in the spec)")
    return config


def _recorded_grid(run_id: str) -> dict[str, Any]:
    """``--resume --run-id R`` alone: the grid options R was started with."""
    from pipeline.sweep.stages import recorded_config
    from warehouse.query import unknown_run

    problem = unknown_run(hygiene.warehouse_root(), run_id)
    if problem is not None:
        raise BadInput(f"--run-id: {problem}")
    recorded = recorded_config(hygiene.warehouse_root(), run_id)
    if recorded is None:
        raise BadInput(f"--run-id {run_id}: no recorded grid for this run (it never started "
                       "here, or it is older than this version): give its grid options too")
    return {k: v for k, v in recorded.items() if k not in ("run_id", "resume", "shard")}


@dataclass
class Terminal:
    out: Console
    err: Console


@dataclass(frozen=True)
class Ending:
    """How a run ends: its exit code and, when its trials were counted, its last line (passed,
    failed, agent errors, incomplete, the exit code), said after everything else."""

    code: int
    last_line: str | None = None


def execute(prepared: PreparedSweep, terminal: Terminal) -> Ending:
    """Run the prepared sweep; its exit code and last line."""
    config = prepared.config
    if config.resume or config.shard is not None:
        ending = _nothing_left(prepared, terminal)
        if ending is not None:
            return ending
    mark("starting the Prefect flow")
    from pipeline.runtime import prefect_api

    _start_services_early(prepared)
    from flows.sweep import run_sweep
    from pipeline.runtime.startup import StartError

    terminal.out.print(Text.assemble("run ", (config.run_id, "bold"),
                                     f": starting on {prepared.where}"))
    previous = signal.signal(signal.SIGINT, _quiet_interrupt)
    keep_run_logs_off_the_terminal()
    try:
        outcome = run_sweep(prepared, "adhoc")
    except StartError as exc:  # Ray or the Prefect API did not start: nothing ran
        terminal.err.print(start_failure_line(exc, _again(config)), markup=False,
                           highlight=False, soft_wrap=True)
        return Ending(ExitCode.INCOMPLETE)
    except KeyboardInterrupt:
        terminal.err.print(f"interrupted (exit {ExitCode.INTERRUPTED}): what finished is saved; "
                           f"continue with: agentsweep run --run-id {config.run_id} --resume",
                           markup=False, soft_wrap=True)
        return Ending(ExitCode.INTERRUPTED)
    finally:
        signal.signal(signal.SIGINT, previous)
        from pipeline.execution.executor import cancel_early_ray

        cancel_early_ray()  # started for a sweep that was refused at the last moment
    mark("done")
    from pipeline.runtime.prefect_state import mark_good

    mark_good(hygiene.prefect_home())
    prefect_api.stop()
    return report(config, outcome, terminal)


def _again(config: SweepConfig) -> str:
    """How to run the sweep again: resume a run the warehouse records, else the same command
    (a new run that never started has nothing to resume)."""
    from pipeline.sweep.stages import recorded_config

    resume = f"resume with: agentsweep run --run-id {config.run_id} --resume"
    try:
        if config.resume or recorded_config(config.warehouse, config.run_id) is not None:
            return resume
    except Exception:  # the warehouse cannot be read now (a store away): say both
        return f"{resume} (or, if it never started, run the same command again)"
    return "run the same command again"


def _start_services_early(prepared: PreparedSweep) -> None:
    """What a cold run would start one after another, started at once before Prefect's import
    (seconds of the driver's CPU): the run's own Prefect API (pipeline.runtime.prefect_api)
    and, for a sweep on a local Ray, that Ray. Each boots in processes of its own, on the other
    core, while the driver imports Prefect; the flow and its execute stage find them."""
    from pipeline.runtime import prefect_api

    prefect_api.start()
    if prepared.plan.pending and not prepared.config.ray_address and not os.environ.get(
            "RAY_ADDRESS"):
        from pipeline.execution.executor import start_local_ray_early

        start_local_ray_early()


def _disk_full(exc: BaseException, config: SweepConfig) -> bool:
    """The failure came from a full disk: said so in the error, or (Prefect's API answers a
    failed SQLite write with an HTTP 500) the disk of the warehouse or Prefect is full now."""
    from warehouse.diskspace import WRITE_RESERVE_BYTES, free_bytes, is_no_space

    return is_no_space(exc) or any(free_bytes(path) < WRITE_RESERVE_BYTES
                                   for path in _disks(config))


def _disks(config: SweepConfig) -> list[Path]:
    """The local folders a run writes to (a warehouse on object storage is no disk of ours)."""
    return [p for p in (config.warehouse, hygiene.prefect_home()) if isinstance(p, Path)]


def _no_space_line(exc: BaseException, config: SweepConfig) -> str:
    """The full disk, by path: the DiskFull in the chain, or the disk that is full now."""
    from warehouse.diskspace import WRITE_RESERVE_BYTES, DiskFull, free_bytes

    current: BaseException | None = exc
    while current is not None:
        if isinstance(current, DiskFull):
            return str(current)
        current = current.__cause__ or current.__context__
    for path in _disks(config):
        free = free_bytes(path)
        if free < WRITE_RESERVE_BYTES:
            return str(DiskFull(path, free))
    return "no space left on a disk the run writes to"


def _quiet_interrupt(signum: int, frame: Any) -> None:
    """Ctrl-C: Prefect's own "crash detected" lines are not news (we print one line and the
    resume command); then the usual KeyboardInterrupt."""
    for name in ("prefect", "prefect.flow_runs", "prefect.task_runs"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    signal.default_int_handler(signum, frame)


def report(config: SweepConfig, outcome: SweepOutcome, terminal: Terminal) -> Ending:
    """The summary, why trials did not pass, what stopped the run; the exit code and the last
    line (how the run's trials ended), for ``main`` to say last."""
    from pipeline.sweep.totals import run_totals

    code = _report(config, outcome, terminal)
    totals = run_totals(outcome.summary_columns, outcome.summary_rows)
    return Ending(code, totals.line(outcome.run_id, code))


def grid_line(grid_size: int, executed: int, skipped: int, shard: object = None,
              elsewhere: int = 0) -> str:
    """What the driver did with the grid (``shard``: the slice it ran, the rest elsewhere)."""
    line = f"grid {grid_size} trials: executed {executed}, skipped {skipped} (already final)"
    if shard is None:
        return line
    return f"{line}; shard {shard}: {elsewhere} trials in the other shards' slices"


def _report(config: SweepConfig, outcome: SweepOutcome, terminal: Terminal) -> int:
    from pipeline.cli.tables import print_summary

    if outcome.summary_rows or outcome.stopped is None:
        print_summary(terminal.out, outcome.summary_columns, outcome.summary_rows,
                      f"pass rate, run {outcome.run_id}")
    if outcome.stopped is None:
        terminal.out.print(grid_line(outcome.grid_size, outcome.executed, outcome.skipped,
                                     config.shard, outcome.elsewhere),
                           markup=False, highlight=False)
    if outcome.stopped is None or outcome.stopped.readable:
        _print_reasons(config.warehouse, outcome.run_id, terminal)
    if outcome.stopped is not None:
        lost = "what was not saved runs again on resume. " if outcome.stopped.lost_work else ""
        terminal.err.print(f"error: stopped: {outcome.stopped.reason}; {lost}"
                           f"{outcome.stopped.remedy}, then: agentsweep run "
                           f"--run-id {outcome.run_id} --resume", markup=False, soft_wrap=True)
        return ExitCode.INCOMPLETE
    from pipeline.execution.breaker import outages_of

    for outage in outages_of(outcome.run_id):
        terminal.out.print(outage.describe(), markup=False)
    refused = _config_error(config.warehouse, outcome.run_id)
    if refused is not None:
        terminal.err.print(f"error: the provider refused the configuration: {refused}; no new "
                           f"trial was started. Fix it, then: agentsweep run --run-id "
                           f"{outcome.run_id} --resume", markup=False, soft_wrap=True)
        return ExitCode.BAD_INPUT
    incomplete = outcome.statuses.get("incomplete", 0)
    if incomplete:
        terminal.err.print(f"{incomplete} trial(s) incomplete (infrastructure errors); "
                           f"continue with: agentsweep run --run-id {outcome.run_id} --resume",
                           markup=False, soft_wrap=True)
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def _print_reasons(root: Root, run_id: str, terminal: Terminal) -> None:
    from pipeline.cli.tables import print_rows
    from warehouse.query import run_named

    reasons = run_named(root, "failure_reasons", {"run_id": run_id})
    if reasons.rows:
        print_rows(terminal.out, reasons.columns, reasons.rows, "table",
                   title="why trials did not pass (most frequent first)")


def _config_error(root: Root, run_id: str) -> str | None:
    from warehouse.query import run_named

    rows = run_named(root, "config_errors", {"run_id": run_id}).rows
    return str(rows[0][0]) if rows else None


def _nothing_left(prepared: PreparedSweep, terminal: Terminal) -> Ending | None:
    """A resume with every trial already final: say so and stop, starting neither Prefect nor
    Ray (nothing would run; no flow run or runs row is recorded for it)."""
    from pipeline.cli.tables import print_summary
    from pipeline.sweep.stages import summarize

    sweep_plan = prepared.plan
    if sweep_plan.pending:
        return None
    from pipeline.sweep.totals import run_totals

    columns, rows = summarize(prepared.config.warehouse, sweep_plan.run_id)
    print_summary(terminal.out, columns, rows, f"pass rate, run {sweep_plan.run_id}")
    terminal.out.print(grid_line(sweep_plan.grid_size, 0, sweep_plan.skipped,
                                 prepared.config.shard, sweep_plan.elsewhere), markup=False,
                       highlight=False)
    return Ending(ExitCode.OK, run_totals(columns, rows).line(sweep_plan.run_id, ExitCode.OK))


def write_run_junit(warehouse: Root, run_id: str, path: Path, terminal: Terminal) -> None:
    """The run's JUnit XML: one testcase per scenario x model x prompt x memory mode."""
    from reports.junit import run_junit, write_junit

    write_junit(path, run_junit(warehouse, run_id))
    terminal.out.print(f"JUnit XML: {path}", markup=False)


def main(options: RunOptions, terminal: Terminal) -> int:
    from pipeline.execution.runlock import RunLocked

    mark("checking the inputs")
    config = None
    try:
        config = build_config(options)
        prepared = prepare(config, append=options.append,
                           say=lambda text: terminal.out.print(text, markup=False))
        ending = execute(prepared, terminal)
        if options.junit is not None:
            write_run_junit(config.warehouse, config.run_id, options.junit, terminal)
        if ending.last_line is not None:
            terminal.out.print(ending.last_line, markup=False, highlight=False, soft_wrap=True)
        return ending.code
    except RunLocked as exc:
        terminal.err.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        return ExitCode.BAD_INPUT
    except BadInput as exc:
        terminal.err.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        return ExitCode.BAD_INPUT
    except ObjectStoreUnavailable as exc:  # past the retry bound, outside the sweep's stop
        resume = (f"agentsweep run --run-id {config.run_id} --resume" if config is not None
                  else "the same command")
        terminal.err.print(f"error: stopped: {exc}. Bring object storage at {exc.endpoint} "
                           f"back, then: {resume}", markup=False, highlight=False,
                           soft_wrap=True)
        return ExitCode.INCOMPLETE
    except Exception as exc:
        lost = None if config is None else start_failure_line(exc, _again(config)) or (
            prefect_lost_line(exc, f"run {config.run_id}",
                              f"agentsweep run --run-id {config.run_id} --resume"))
        if lost is not None:
            terminal.err.print(lost, markup=False, highlight=False, soft_wrap=True)
            return ExitCode.INCOMPLETE
        if config is None or not _disk_full(exc, config):
            raise
        terminal.err.print(f"error: {_no_space_line(exc, config)}; what finished is saved. "
                           f"Free some space, then {_again(config)}", markup=False,
                           soft_wrap=True)
        return ExitCode.INCOMPLETE


