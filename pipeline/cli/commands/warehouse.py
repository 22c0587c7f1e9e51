"""Commands over the warehouse: ``runs``, ``sql``, ``schema``, ``show``, ``rescore``
and the ``warehouse`` group (check, vacuum, compact)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from pipeline.cli import terminal
from pipeline.cli.fit import Narrowing
from pipeline.cli.outputs import Force, checked_output
from pipeline.cli.run_ids import checked_run_id, known_runs
from pipeline.cli.terminal import fail, first_line, print_rows
from pipeline.errors import ExitCode
from pipeline.runtime import hygiene

RUNS_NARROWING = Narrowing(spare=("invocations", "models", "finished", "grid", "started"),
                           whole=("run_id",))
"""On a narrow terminal ``runs`` keeps a row per line: the run id (to copy) and how its trials
ended; the rest goes first."""


app = typer.Typer()
warehouse_app = typer.Typer(add_completion=False, no_args_is_help=True,
                            help="The warehouse's files.")


@app.command()
def runs(
    output_format: Annotated[str, typer.Option("--format", help="table, csv or json")] = "table",
) -> None:
    """The runs in the warehouse: when, which grid, how their trials ended."""
    from warehouse.query import run_named

    if output_format not in ("table", "csv", "json"):
        fail(f"--format: expected table, csv or json, got {output_format!r}")
    result = run_named(hygiene.warehouse_root(), "runs_list")
    print_rows(result.columns, result.rows, output_format, title="runs",
                narrowing=RUNS_NARROWING)


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="SQL over views runs, trials, events, checks.")],
    output_format: Annotated[str, typer.Option("--format", help="table, csv or json")] = "table",
    output: Annotated[Path | None, typer.Option(
        "--output", help="Write the result to this file instead (.csv, .json or .parquet).")
    ] = None,
    force: Force = False,
) -> None:
    """Run read-only DuckDB SQL over the warehouse and print (or --output) the result."""
    import duckdb

    from warehouse.query import ReadOnlyViolation, run_user_sql

    if output_format not in ("table", "csv", "json"):
        fail(f"--format: expected table, csv or json, got {output_format!r}")
    if output is not None and output.suffix not in (".csv", ".json", ".parquet"):
        fail(f"--output: {output}: the name must end in .csv, .json or .parquet")
    checked_output(output, "--output", force)
    try:
        result = run_user_sql(hygiene.warehouse_root(), query)
    except ReadOnlyViolation as exc:
        fail(str(exc))
    except duckdb.Error as exc:
        fail(f"SQL error: {first_line(str(exc))}")
    if output is None:
        print_rows(result.columns, result.rows, output_format)
        return
    from warehouse.export import write_result

    write_result(result, output)
    terminal.console.print(f"wrote {len(result.rows)} row(s) to {output}", markup=False)


@app.command()
def schema(
    write: Annotated[bool, typer.Option("--write", help="Regenerate the files.")] = False,
) -> None:
    """Check (or regenerate) the generated schema files: catalog JSON Schema, warehouse golden."""
    from pipeline.catalog import catalogs_root
    from pipeline.catalog.schema import generated_files
    from warehouse.atomic import write_text
    from warehouse.schema import SCHEMA_VERSION, describe_json

    targets = {catalogs_root() / "schema" / n: t for n, t in generated_files().items()}
    golden = Path(__file__).resolve().parents[2] / "warehouse" / "golden"
    targets[golden / f"schema_v{SCHEMA_VERSION}.json"] = describe_json()
    stale = [p for p, text in targets.items() if not p.is_file() or p.read_text("utf-8") != text]
    if write:
        for path in stale:
            write_text(path, targets[path])
            terminal.console.print(f"wrote {path}")
        return
    for path in stale:
        terminal.err_console.print(f"{path}: out of date (run `agentsweep schema --write`)")
    if stale:
        raise typer.Exit(ExitCode.BLOCKED)
    terminal.console.print("schema files are up to date")


@app.command()
def rescore(
    run_id: Annotated[str, typer.Option("--run-id", help="The run to score again.")],
    new_run_id: Annotated[str, typer.Option("--as", help="Run id of the rescored copy.")],
) -> None:
    """Score a run's stored traces again with today's checks, offline, as a new run."""
    from pipeline.stored.rescore import rescore_run
    from warehouse.query import run_named

    known_runs(("--run-id", run_id))
    new_run_id = checked_run_id("--as", new_run_id)
    root = hygiene.warehouse_root()
    if run_named(root, "trial_count", {"run_id": new_run_id}).rows[0][0]:
        fail(f"--as: run {new_run_id!r} already exists")
    outcome = rescore_run(root, run_id, new_run_id)
    if not outcome.rescored:
        fail(f"--run-id: run {run_id!r} has no scorable trial")
    terminal.console.print(f"rescored {outcome.rescored} trial(s) of {run_id} as {new_run_id} "
                           f"({outcome.skipped} incomplete or without their scenario skipped; "
                           f"{outcome.scenarios_changed} scored against a changed scenario; "
                           f"{outcome.judgments_copied} judgment(s) carried over)")


@app.command()
def show(
    trial_id: Annotated[str, typer.Argument(help="Trial id (a unique prefix is enough).")],
    run_id: Annotated[str | None, typer.Option("--run-id", help="When the id is in several "
                                                "runs.")] = None,
) -> None:
    """Print one trial: the dialog with memory, tool calls and results, then its checks."""
    from pipeline.cli.judge import judgment_lines
    from pipeline.cli.show import render
    from pipeline.stored.trials import stored_trials
    from pipeline.util.untrusted import visible
    from warehouse.query import run_named

    known_runs(("--run-id", run_id))
    root = hygiene.warehouse_root()
    found = [(r, t) for r, t in run_named(root, "find_trial", {"prefix": trial_id}).rows
             if run_id is None or r == run_id]
    if not found:
        fail(f"no trial id starts with {trial_id!r}" + (f" in run {run_id!r}" if run_id else "")
              + " (a run's trial ids: agentsweep sql \"select trial_id, scenario_id from trials "
              "where run_id = 'R'\"; `agentsweep runs` lists the run ids)")
    if len(found) > 1:
        fail(f"{len(found)} trials match {trial_id!r}: "
              + ", ".join(f"{t[:12]} (run {r})" for r, t in found[:8])
              + "; add --run-id or a longer id")
    run, full_id = found[0]
    (trial,) = stored_trials(root, run, full_id)
    sys.stdout.write(visible(render(trial)) + "\n")
    judged = judgment_lines(root, run, full_id)
    if judged:  # a separate signal: never part of the verdict above
        sys.stdout.write("\njudges (a separate signal; passed is the checks'):\n"
                         + visible("\n".join(judged)) + "\n")


@warehouse_app.command(name="check")
def warehouse_check() -> None:
    """Read every file whole (page checksums verified); list the damaged ones (exit 1)."""
    from warehouse.check import check_warehouse, leftover_paths

    root = hygiene.warehouse_root()
    count, damaged = check_warehouse(root)
    for item in damaged:
        terminal.err_console.print(f"{item.path}: {item.problem}", markup=False, soft_wrap=True)
    terminal.console.print(f"{count} file(s) under {root}: {len(damaged)} damaged", markup=False)
    left = leftover_paths(root)
    remover = ("`agentsweep warehouse compact` removes a run's" if isinstance(root, Path)
               else "`agentsweep warehouse vacuum` removes them")
    for path in left:
        terminal.err_console.print(f"{path}: leftover of an interrupted write or compaction (never "
                                   f"read; {remover})", markup=False, soft_wrap=True)
    if left:
        terminal.console.print(f"{len(left)} leftover(s)", markup=False)
    if damaged:
        raise typer.Exit(ExitCode.BLOCKED)


@warehouse_app.command(name="vacuum")
def warehouse_vacuum(
    older_than: Annotated[float, typer.Option(
        "--older-than", min=0, help="Only objects last written this many minutes ago or "
        "more (a batch being written now is not garbage yet).")] = 60.0,
) -> None:
    """Object storage: remove what no reader reads (parts of a batch whose commit record
    never landed, records and parts a compaction replaced)."""
    from datetime import timedelta

    from warehouse.location import S3Location
    from warehouse.objectstore import vacuum

    root = hygiene.warehouse_root()
    if not isinstance(root, S3Location):
        fail("warehouse vacuum is for a warehouse on object storage (AGENTSWEEP_WAREHOUSE="
              "s3://...); a folder's leftovers go with `agentsweep warehouse compact`")
        return
    removed = vacuum(root, timedelta(minutes=older_than))
    for item in removed:
        terminal.err_console.print(f"{root}/{item.key}: removed ({item.why})", markup=False,
                                   soft_wrap=True)
    terminal.console.print(f"{len(removed)} object(s) removed from {root}", markup=False)


@warehouse_app.command(name="compact")
def warehouse_compact(
    run_id: Annotated[str | None, typer.Option(
        "--run-id", help="Only this run (default: every run).")] = None,
    landed: Annotated[bool, typer.Option(
        "--landed", help="Only the parts that have landed in a run that may be running "
                         "(needs --run-id; its lock is not taken).")] = False,
) -> None:
    """Rewrite each run's part files as a few large sorted files, swapped in whole; a run
    being run (its lock held) is left alone (exit 1), unless ``--landed``."""
    from pipeline.sweep.compaction import RunCompaction, compact_runs
    from warehouse.compact import CompactionError
    from warehouse.writer import WarehouseError

    runs = None if run_id is None else [checked_run_id("--run-id", run_id)]
    root = hygiene.warehouse_root()
    if landed and runs is None:
        fail("--landed compacts one run: give --run-id")
    try:
        if landed and runs is not None:
            from pipeline.execution.lease import LeaseHeld
            from pipeline.sweep.compaction import compact_landed_run

            try:
                done = [RunCompaction(runs[0], compact_landed_run(root, runs[0]))]
            except LeaseHeld as exc:
                done = [RunCompaction(runs[0], [], str(exc))]
        else:
            done = compact_runs(root, runs)
    except (CompactionError, WarehouseError) as exc:  # a stored folder that names no run
        fail(str(exc))
    for run in done:
        if run.refused:
            terminal.err_console.print(run.refused, markup=False, soft_wrap=True)
            continue
        before = sum(t.files_before for t in run.tables)
        after = sum(t.files_after for t in run.tables)
        terminal.console.print(f"{run.run_id}: {before} file(s) -> {after}" if run.tables
                               else f"{run.run_id}: nothing to compact", markup=False)
    if any(run.refused for run in done):
        raise typer.Exit(ExitCode.BLOCKED)
