"""Reports and the viewer: ``report`` (summary, matrix, HTML, pass^k, ...) and ``view``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipeline.cli import terminal
from pipeline.cli.options import (
    DecisionCatalogs,
    ReviewFile,
)
from pipeline.cli.outputs import Force, checked_output
from pipeline.cli.run_ids import checked_run_id, known_runs
from pipeline.cli.tables import print_table
from pipeline.cli.terminal import fail, print_rows
from pipeline.runtime import hygiene

REPORTS = ("summary", "matrix", "first_violations", "failure-map", "html", "pass_hat_k",
           "regressions")
VIEW_OF_REPORT = {"failure-map": "failure_map_run"}
"""Reports whose rows (--format csv/json) are another named query's."""


app = typer.Typer()


@app.command()
def view(
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on (0: any "
                                      "free one).")] = 8321,
    host: Annotated[str, typer.Option(help="Address to listen on; anything but loopback lets "
                                      "other machines read the warehouse.")] = "127.0.0.1",
) -> None:
    """A local, read-only web viewer over the warehouse: runs (live progress of a running
    sweep), trends across nights, search over trials, dialogs side by side."""
    from pipeline.cli.view import view_main

    code = view_main(hygiene.warehouse_root(), host, port, terminal.console, terminal.err_console)
    if code:
        raise typer.Exit(code)


@app.command()
def report(
    name: Annotated[str, typer.Argument(help="summary, matrix, first_violations, "
                                             "failure-map, html, pass_hat_k or regressions")],
    run_id: Annotated[str | None, typer.Option(
        "--run-id", help="The run to report on (every report but regressions).")] = None,
    since: Annotated[str, typer.Option(
        "--since", help="regressions: the runs started in this window (30d, 12h, 2w, or a "
        "date).")] = "30d",
    output_format: Annotated[str, typer.Option("--format", help="table, csv or json")] = "table",
    limit: Annotated[int, typer.Option(min=1, help="Rows shown as a table (csv and json give "
                                                   "all).")] = 200,
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="html: the file to write (its folder must exist).")] = None,
    baseline: Annotated[str | None, typer.Option(
        "--baseline", help="html: compare the run (candidate) with this run.")] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", help="html with --baseline: gate config (YAML) for the verdict.")] = None,
    review: ReviewFile = None,
    catalog: DecisionCatalogs = None,
    max_failed_traces: Annotated[int, typer.Option(
        min=0, help="html: trials that did not pass embedded whole, at most.")] = 500,
    passed_sample: Annotated[int, typer.Option(
        min=0, help="html: passed trials embedded whole (a sample).")] = 50,
    force: Force = False,
) -> None:
    """Print a named report (a .sql file in warehouse/sql/) for one run; `html` writes one
    self-contained HTML file (-o) of the run, or with --baseline of the comparison;
    `regressions` reads across runs: the cells that broke since --since and what recorded
    input changed then, and the flaky cells."""
    from warehouse.query import RUNS_HINT, run_named

    if name not in REPORTS:
        fail(f"unknown report {name!r}; known: {', '.join(REPORTS)}")
    if name == "regressions":
        _report_regressions(since, output_format, limit)
        return
    if run_id is None:
        fail(f"report {name} needs --run-id ({RUNS_HINT})")
    assert run_id is not None
    known_runs(("--run-id", run_id), ("--baseline", baseline))
    if name == "html":
        checked_output(output, "-o", force)
        _report_html(run_id, output, baseline, config, review, catalog or [],
                     max_failed_traces, passed_sample)
        return
    if output_format not in ("table", "csv", "json"):
        fail(f"--format: expected table, csv or json, got {output_format!r}")
    if name == "failure-map" and output_format == "table":
        _print_failure_map(run_id)
        return
    if name == "pass_hat_k":
        _print_pass_hat_k(run_id, output_format, limit)
        return
    result = run_named(hygiene.warehouse_root(), VIEW_OF_REPORT.get(name, name),
                       {"run_id": run_id})
    rows = result.rows if output_format != "table" else result.rows[:limit]
    print_rows(result.columns, rows, output_format, title=f"{name}, run {run_id}")
    if len(rows) < len(result.rows):
        terminal.console.print(
            f"... {len(result.rows) - len(rows)} more rows (--limit N, or --format "
                      "csv for all)")


def _report_regressions(since: str, output_format: str, limit: int) -> None:
    from pipeline.cli.trends import print_trends
    from reports.trends import WindowError, window_start

    if output_format not in ("table", "csv", "json"):
        fail(f"--format: expected table, csv or json, got {output_format!r}")
    try:
        start = window_start(since)
    except WindowError as exc:
        fail(str(exc))
    print_trends(terminal.console, hygiene.warehouse_root(), start, output_format, limit)


def _report_html(run_id: str, output: Path | None, baseline: str | None, config: Path | None,
                 review: Path | None, catalogs: list[Path], max_failed: int,
                 passed_sample: int) -> None:
    from pipeline.cli.report import html_main
    from pipeline.decide.html import HtmlOptions
    from reports.html import TraceOptions

    if output is None:
        fail("report html needs -o FILE (the HTML file to write)")
    assert output is not None
    options = HtmlOptions(checked_run_id("--run-id", run_id), output,
                          None if baseline is None else checked_run_id("--baseline", baseline),
                          config, review, tuple(catalogs),
                          TraceOptions(max_failed, passed_sample))
    code = html_main(hygiene.warehouse_root(), options, terminal.console, terminal.err_console)
    if code:
        raise typer.Exit(code)


def _print_pass_hat_k(run_id: str, output_format: str, limit: int) -> None:
    """The rows (CSV and JSON with the scenarios each cell leaves out); a table says them in a
    note under it (reports.pass_hat_k)."""
    from reports.pass_hat_k import load_pass_hat_k

    found = load_pass_hat_k(hygiene.warehouse_root(), run_id)
    if output_format != "table":
        print_rows(list(found.columns), list(found.rows), output_format)
        return
    columns, rows = found.table()
    print_rows(columns, [tuple(r) for r in rows[:limit]], "table",
                title=f"pass_hat_k, run {run_id}")
    if len(rows) > limit:
        terminal.console.print(
            f"... {len(rows) - limit} more rows (--limit N, or --format csv for all)")
    note = found.note()
    if note is not None:
        terminal.console.print(note, markup=False, highlight=False, soft_wrap=True)


def _print_failure_map(run_id: str) -> None:
    from reports.failure_map import excluded_note, load_failure_map, map_table

    groups = load_failure_map(hygiene.warehouse_root(), run_id)
    if not groups:
        fail(f"run {run_id!r} has no condition trials (run a conditions suite: "
              "docs/conditions.md)")
    for group in groups:
        table = map_table(group)
        print_table(terminal.console, table.columns, table.rows, table.title, table.row_styles)
    note = excluded_note(groups)
    if note is not None:
        terminal.console.print(note, markup=False)
