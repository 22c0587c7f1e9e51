"""The ``agentsweep`` command line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.text import Text

from pipeline.cli.fit import DEFAULT_NARROWING, Narrowing
from pipeline.cli.interop import app as import_app
from pipeline.cli.interop import export_app
from pipeline.cli.judge import app as judge_app
from pipeline.cli.local_model import app as local_model_app
from pipeline.cli.outputs import Force, checked_output
from pipeline.cli.run_ids import known_runs
from pipeline.cli.tables import cell as text_cell
from pipeline.cli.tables import make_console, print_table
from pipeline.errors import ExitCode
from pipeline.runtime import hygiene
from pipeline.runtime.bounded_exit import exit_code_of, exit_within

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_show_locals=False,
                  help="Evaluate tool-calling agents over whole dialogs, many times.")
app.add_typer(local_model_app, name="local-model")
app.add_typer(import_app, name="import")
app.add_typer(export_app, name="export")
app.add_typer(judge_app, name="judge")
checks_app = typer.Typer(add_completion=False, no_args_is_help=True,
                         help="Calibrate the checks against a person's verdicts.")
app.add_typer(checks_app, name="checks")
warehouse_app = typer.Typer(add_completion=False, no_args_is_help=True,
                            help="The warehouse's files.")
app.add_typer(warehouse_app, name="warehouse")
console = make_console()
err_console = make_console(stderr=True)



@app.command()
def run(
    suite: Annotated[list[Path] | None, typer.Option(
        "--suite", help="Scenario suite (JSONL); repeatable. Default: catalogs/"
        "default-suites.txt.")] = None,
    catalog: Annotated[list[Path] | None, typer.Option(
        "--catalog", help="A folder of domain folders, searched before the bundled catalogs; "
        "repeatable.")] = None,
    scenario: Annotated[list[str] | None, typer.Option(
        "--scenario", help="Scenario id to run; repeatable. Default: every scenario.")] = None,
    model: Annotated[list[str] | None, typer.Option(
        "--model", help="LiteLLM model name, or local/default (the bundled local model); "
        "repeatable. Default: reference/golden.")] = None,
    prompt: Annotated[list[str] | None, typer.Option(
        "--prompt", help="Prompt name in the domain's prompts/; repeatable.")] = None,
    memory_mode: Annotated[list[str] | None, typer.Option(
        "--memory-mode", help="chat, summary or structured (the built-in agent's); repeatable. "
        "Default: all three.")] = None,
    agent: Annotated[list[str] | None, typer.Option(
        "--agent", help="The agent under test: builtin, path/to/file.py:attribute, "
        "package.module:attribute or an http(s):// agent service (docs/agents.md); "
        "repeatable. Default: builtin.")] = None,
    agent_turn_timeout_s: Annotated[float | None, typer.Option(
        "--agent-turn-timeout-s", help="An external agent's time for one user turn; past it "
        "the trial is an agent error (agent_timeout). Default: 300.")] = None,
    repeats: Annotated[int | None, typer.Option(
        min=1, help="Repeats per grid cell. Default: 3.")] = None,
    tools: Annotated[str | None, typer.Option(
        "--tools", help="sandbox (the domain's tools, writes intercepted) or mock (every tool "
        "answers from the cases' recorded results). Default: sandbox.")] = None,
    api_base: Annotated[str | None, typer.Option(
        "--api-base", help="OpenAI-compatible endpoint for every --model (a local server, "
        "agentsweep reference-server, a proxy).")] = None,
    temperature: Annotated[float | None, typer.Option(
        help="Sampling temperature. Default: 0.0.")] = None,
    seed: Annotated[int | None, typer.Option(
        help="Seed of repeat 0; repeat r gets seed + r. Default: none.")] = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Default: generated.")] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="With --run-id: run only trials without a final row.")] = False,
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", envvar="RAY_ADDRESS", help="Ray cluster; default a local Ray.")] = None,
    max_in_flight: Annotated[int | None, typer.Option(
        min=1, help="Trials in flight at once. Default: 64.")] = None,
    timeout_s: Annotated[float | None, typer.Option(
        "--timeout-s", help="Time limit of one model call (connect at most 10 s). Default: "
        "120 s (local models 900 s).")] = None,
    spec: Annotated[Path | None, typer.Option("--spec", help="Sweep spec (YAML) instead of the "
        "grid options; --run-id, --resume, --ray-address, --repeats, --max-cost-usd override "
        "it.")] = None,
    append: Annotated[bool, typer.Option(
        "--append", help="Add this grid to an existing --run-id (another grid).")] = False,
    junit: Annotated[Path | None, typer.Option(
        "--junit", help="Write the run's JUnit XML here (one testcase per scenario x model x "
        "prompt x memory mode).")] = None,
    force: Force = False,
    user_model: Annotated[str | None, typer.Option(
        "--user-model", help="The user simulator's model (any model name) for scenarios with a "
        "simulated user; without it their fixed turns are played.")] = None,
    user_max_turns: Annotated[int | None, typer.Option(
        "--user-max-turns", min=1, help="Turns the simulated user may speak; past them the "
        "dialog ends as turn_limit. Default: 30.")] = None,
    max_cost_usd: Annotated[float | None, typer.Option(
        "--max-cost-usd", help="Spend cap of the sweep (USD): at the cap "
        "no new attempt starts, exit 3; with --resume, a higher cap goes on (overrides the "
        "spec's and the recorded one).")] = None,
) -> None:
    """Run a sweep: suites x agents x models x prompts x memory modes x repeats."""
    from pipeline.cli.run import RunOptions, Terminal, main

    checked_output(junit, "--junit", force)
    options = RunOptions(
        suite=suite or [], catalog=catalog or [], scenario=scenario or [], model=model or [],
        prompt=prompt or [], memory_mode=memory_mode or [], repeats=repeats, tools=tools,
        agent=agent or [], agent_turn_timeout_s=agent_turn_timeout_s,
        user_model=user_model, user_max_turns=user_max_turns,
        api_base=api_base, temperature=temperature, seed=seed, run_id=run_id, resume=resume,
        ray_address=ray_address, max_in_flight=max_in_flight, timeout_s=timeout_s, spec=spec,
        append=append, junit=junit, max_cost_usd=max_cost_usd)
    code = main(options, Terminal(console, err_console))
    if code:
        raise typer.Exit(code)


# Options that compare and gate share, declared once.
DecisionCatalogs = Annotated[list[Path] | None, typer.Option(
    "--catalog", help="A catalog root holding the runs' suites (for their critical marks); "
    "repeatable.")]
ReviewFile = Annotated[Path | None, typer.Option(
    "--review", help="Review file acknowledging expectation changes.")]
BootstrapSeed = Annotated[int, typer.Option(help="Bootstrap seed.")]
BootstrapResamples = Annotated[int, typer.Option(min=1, help="Bootstrap resamples.")]
BootstrapConfidence = Annotated[float, typer.Option(
    min=0.5, max=0.999, help="Two-sided confidence of the interval.")]


@app.command()
def compare(
    baseline: Annotated[str, typer.Argument(help="The baseline run id.")],
    candidate: Annotated[str, typer.Argument(help="The candidate run id.")],
    output_format: Annotated[str, typer.Option("--format", help="table or json")] = "table",
    fail_on_new_regression: Annotated[bool, typer.Option(
        "--fail-on-new-regression", help="Exit 1 when a cell regressed (new_failure or "
        "stability_regression).")] = False,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML here.")] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", help="Gate config (YAML) for the verdict shown.")] = None,
    review: ReviewFile = None,
    catalog: DecisionCatalogs = None,
    seed: BootstrapSeed = 7,
    resamples: BootstrapResamples = 5000,
    confidence: BootstrapConfidence = 0.9,
    force: Force = False,
    all_cells: Annotated[bool, typer.Option(
        "--all", help="List the unchanged cells too (by default the other cells are listed "
        "and these counted).")] = False,
) -> None:
    """Baseline vs candidate: transitions per cell, pass^k, usage deltas, expectation changes,
    the paired bootstrap interval and the gate's verdict (stored in the comparisons table)."""
    from pipeline.cli.decide import compare_main
    from pipeline.decide.decision import DecideOptions

    fmt = _decide_format(output_format)
    known_runs(("baseline", baseline), ("candidate", candidate))
    checked_output(junit, "--junit", force)
    options = DecideOptions(baseline, candidate, config, review, junit, seed, resamples,
                            confidence, fmt, fail_on_new_regression, tuple(catalog or []))
    code = compare_main(hygiene.warehouse_root(), options, console, err_console, all_cells)
    if code:
        raise typer.Exit(code)


@app.command()
def gate(
    candidate: Annotated[str, typer.Argument(help="The candidate run id.")],
    baseline: Annotated[str, typer.Option("--baseline", help="The baseline run id.")],
    config: Annotated[Path | None, typer.Option(
        "--config", help="Gate config (YAML): thresholds; the candidate run's recorded "
        "thresholds apply where it sets none.")] = None,
    review: ReviewFile = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML here.")] = None,
    output_format: Annotated[str, typer.Option("--format", help="table or json")] = "table",
    catalog: DecisionCatalogs = None,
    seed: BootstrapSeed = 7,
    resamples: BootstrapResamples = 5000,
    confidence: BootstrapConfidence = 0.9,
    force: Force = False,
) -> None:
    """The admission rule: exit 0 admit, 1 block, 2 bad input, 3 incomplete; every reason
    that applies is listed."""
    from pipeline.cli.decide import gate_main
    from pipeline.decide.decision import DecideOptions

    fmt = _decide_format(output_format)
    known_runs(("candidate", candidate), ("--baseline", baseline))
    checked_output(junit, "--junit", force)
    options = DecideOptions(baseline, candidate, config, review, junit, seed, resamples,
                            confidence, fmt, catalogs=tuple(catalog or []))
    code = gate_main(hygiene.warehouse_root(), options, console, err_console)
    if code:
        raise typer.Exit(code)


def _decide_format(output_format: str) -> Literal["table", "json"]:
    if output_format == "json":
        return "json"
    if output_format != "table":
        _fail(f"--format: expected table or json, got {output_format!r}")
    return "table"


RUNS_NARROWING = Narrowing(spare=("invocations", "models", "finished", "grid", "started"),
                           whole=("run_id",))
"""On a narrow terminal ``runs`` keeps a row per line: the run id (to copy) and how its trials
ended; the rest goes first."""


@app.command()
def runs(
    output_format: Annotated[str, typer.Option("--format", help="table, csv or json")] = "table",
) -> None:
    """The runs in the warehouse: when, which grid, how their trials ended."""
    from warehouse.query import run_named

    if output_format not in ("table", "csv", "json"):
        _fail(f"--format: expected table, csv or json, got {output_format!r}")
    result = run_named(hygiene.warehouse_root(), "runs_list")
    _print_rows(result.columns, result.rows, output_format, title="runs",
                narrowing=RUNS_NARROWING)


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

    code = view_main(hygiene.warehouse_root(), host, port, console, err_console)
    if code:
        raise typer.Exit(code)


def _version(value: bool) -> None:
    if value:
        from pipeline.util.version import code_version

        console.print(f"agentsweep {code_version()}", markup=False)
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Evaluate tool-calling agents over whole dialogs, many times."""


@app.command()
def up(
    cpus: Annotated[int | None, typer.Option(min=1, help="CPUs for trials. Default: all.")] = None,
    dashboard: Annotated[bool, typer.Option(
        "--dashboard", help="Also start Ray's dashboard on 127.0.0.1 (needs ray[default]).")
    ] = False,
) -> None:
    """Start a local Ray head and a Prefect server for AGENTSWEEP_HOME; later runs attach."""
    from pipeline.runtime import stack
    from pipeline.runtime.startup import StartError, StartupSettingError, up_failure_line
    try:
        state = stack.up(cpus=cpus, say=lambda text: console.print(text, markup=False),
                         dashboard=dashboard)
        console.print("starting trial workers (they stay warm for later runs)")
        _prewarm(state.ray_address)
    except StartError as exc:  # a service that did not come up in time: exit 3
        err_console.print(up_failure_line(exc), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(ExitCode.INCOMPLETE) from None
    except (stack.StackError, StartupSettingError) as exc:
        _fail(str(exc))
    console.print(f"up: Ray {state.ray_address}, Prefect {state.prefect_api_url}, Prefect UI "
                  f"{state.prefect_ui_url} (`agentsweep down` stops them)", markup=False)
    if state.ray_dashboard_url:
        console.print(f"Ray dashboard {state.ray_dashboard_url}", markup=False)


def _prewarm(address: str) -> None:
    """Start the warm worker pool a run with default settings will use."""
    from pipeline.execution.executor import ray_session, sized_pool
    from pipeline.sweep.config import SweepConfig

    in_flight = int(SweepConfig.model_fields["max_in_flight"].default)
    with ray_session(address) as ray:
        sized_pool(ray, in_flight).alive()


@app.command()
def down() -> None:
    """Stop the local Ray head and Prefect server of AGENTSWEEP_HOME."""
    from pipeline.runtime import stack
    console.print("stopped" if stack.down() else "nothing was up")


@app.command()
def status() -> None:
    """Whether the local stack of AGENTSWEEP_HOME is up."""
    from pipeline.runtime import stack
    state = stack.read_state()
    if state is None:
        console.print("down: runs start an ephemeral Prefect API and a local Ray")
        return
    console.print(f"Ray {state.ray_address}: {'up' if state.ray_up() else 'DOWN'}; Prefect "
                  f"{state.prefect_api_url}: {'up' if state.prefect_up() else 'DOWN'} (UI "
                  f"{state.prefect_ui_url})",
                  markup=False)


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
        _fail(f"--format: expected table, csv or json, got {output_format!r}")
    if output is not None and output.suffix not in (".csv", ".json", ".parquet"):
        _fail(f"--output: {output}: the name must end in .csv, .json or .parquet")
    checked_output(output, "--output", force)
    try:
        result = run_user_sql(hygiene.warehouse_root(), query)
    except ReadOnlyViolation as exc:
        _fail(str(exc))
    except duckdb.Error as exc:
        _fail(f"SQL error: {first_line(str(exc))}")
    if output is None:
        _print_rows(result.columns, result.rows, output_format)
        return
    from warehouse.export import write_result

    write_result(result, output)
    console.print(f"wrote {len(result.rows)} row(s) to {output}", markup=False)


REPORTS = ("summary", "matrix", "first_violations", "failure-map", "html", "pass_hat_k",
           "regressions")
VIEW_OF_REPORT = {"failure-map": "failure_map_run"}
"""Reports whose rows (--format csv/json) are another named query's."""


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
        _fail(f"unknown report {name!r}; known: {', '.join(REPORTS)}")
    if name == "regressions":
        _report_regressions(since, output_format, limit)
        return
    if run_id is None:
        _fail(f"report {name} needs --run-id ({RUNS_HINT})")
    assert run_id is not None
    known_runs(("--run-id", run_id), ("--baseline", baseline))
    if name == "html":
        checked_output(output, "-o", force)
        _report_html(run_id, output, baseline, config, review, catalog or [],
                     max_failed_traces, passed_sample)
        return
    if output_format not in ("table", "csv", "json"):
        _fail(f"--format: expected table, csv or json, got {output_format!r}")
    if name == "failure-map" and output_format == "table":
        _print_failure_map(run_id)
        return
    if name == "pass_hat_k":
        _print_pass_hat_k(run_id, output_format, limit)
        return
    result = run_named(hygiene.warehouse_root(), VIEW_OF_REPORT.get(name, name),
                       {"run_id": run_id})
    rows = result.rows if output_format != "table" else result.rows[:limit]
    _print_rows(result.columns, rows, output_format, title=f"{name}, run {run_id}")
    if len(rows) < len(result.rows):
        console.print(f"... {len(result.rows) - len(rows)} more rows (--limit N, or --format "
                      "csv for all)")


def _report_regressions(since: str, output_format: str, limit: int) -> None:
    from pipeline.cli.trends import print_trends
    from reports.trends import WindowError, window_start

    if output_format not in ("table", "csv", "json"):
        _fail(f"--format: expected table, csv or json, got {output_format!r}")
    try:
        start = window_start(since)
    except WindowError as exc:
        _fail(str(exc))
    print_trends(console, hygiene.warehouse_root(), start, output_format, limit)


def _report_html(run_id: str, output: Path | None, baseline: str | None, config: Path | None,
                 review: Path | None, catalogs: list[Path], max_failed: int,
                 passed_sample: int) -> None:
    from pipeline.cli.report import html_main
    from pipeline.decide.html import HtmlOptions
    from reports.html import TraceOptions

    if output is None:
        _fail("report html needs -o FILE (the HTML file to write)")
    assert output is not None
    options = HtmlOptions(run_id, output, baseline, config, review, tuple(catalogs),
                          TraceOptions(max_failed, passed_sample))
    code = html_main(hygiene.warehouse_root(), options, console, err_console)
    if code:
        raise typer.Exit(code)


def _print_pass_hat_k(run_id: str, output_format: str, limit: int) -> None:
    """The rows (CSV and JSON with the scenarios each cell leaves out); a table says them in a
    note under it (reports.pass_hat_k)."""
    from reports.pass_hat_k import load_pass_hat_k

    found = load_pass_hat_k(hygiene.warehouse_root(), run_id)
    if output_format != "table":
        _print_rows(list(found.columns), list(found.rows), output_format)
        return
    columns, rows = found.table()
    _print_rows(columns, [tuple(r) for r in rows[:limit]], "table",
                title=f"pass_hat_k, run {run_id}")
    if len(rows) > limit:
        console.print(f"... {len(rows) - limit} more rows (--limit N, or --format csv for all)")
    note = found.note()
    if note is not None:
        console.print(note, markup=False, highlight=False, soft_wrap=True)


def _print_failure_map(run_id: str) -> None:
    from reports.failure_map import excluded_note, load_failure_map, map_table

    groups = load_failure_map(hygiene.warehouse_root(), run_id)
    if not groups:
        _fail(f"run {run_id!r} has no condition trials (run a conditions suite: "
              "docs/conditions.md)")
    for group in groups:
        table = map_table(group)
        print_table(console, table.columns, table.rows, table.title, table.row_styles)
    note = excluded_note(groups)
    if note is not None:
        console.print(note, markup=False)


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
            console.print(f"wrote {path}")
        return
    for path in stale:
        err_console.print(f"{path}: out of date (run `agentsweep schema --write`)")
    if stale:
        raise typer.Exit(ExitCode.BLOCKED)
    console.print("schema files are up to date")


@app.command(name="reference-server")
def reference_server(
    port: Annotated[int, typer.Option(min=0, max=65535, help="0: any free port.")] = 8765,
    wire: Annotated[str, typer.Option(
        "--wire", help="Wire format: openai (chat completions), anthropic (Messages API) or "
        "gemini (generateContent).")] = "openai",
    latency_ms: Annotated[float, typer.Option("--latency-ms", min=0)] = 0.0,
    error_rate_429: Annotated[float, typer.Option("--error-rate-429")] = 0.0,
    error_rate_500: Annotated[float, typer.Option("--error-rate-500")] = 0.0,
    overloaded_rate: Annotated[float, typer.Option(
        "--overloaded-rate", help="Share answered 'overloaded' (anthropic: 529, else 503).")
    ] = 0.0,
    context_length_rate: Annotated[float, typer.Option(
        "--context-length-rate", help="Share answered 400: the prompt is over the context.")
    ] = 0.0,
    timeout_rate: Annotated[float, typer.Option("--timeout-rate")] = 0.0,
    drop_rate: Annotated[float, typer.Option("--drop-rate")] = 0.0,
    seed: Annotated[int, typer.Option(help="Seed of the fault draws.")] = 0,
    plays: Annotated[str | None, typer.Option(
        "--plays", help="Answer every request as this variant (e.g. mutant-ignores-switch), "
        "whatever model it names: a model that changed behind its name.")] = None,
) -> None:
    """Serve the reference models over HTTP on 127.0.0.1 until Ctrl-C (OpenAI-compatible, or
    Anthropic's or Gemini's wire format with --wire)."""
    from pydantic import ValidationError

    from pipeline.models.faults import FaultProfile
    from pipeline.reference.server import serve_forever
    from pipeline.reference.wire import WIRE_NAMES

    if wire not in WIRE_NAMES:
        _fail(f"--wire: {wire!r} is not one of {', '.join(WIRE_NAMES)}")
    options = {"latency_ms": "--latency-ms", "rate_limit": "--error-rate-429",
               "server_error": "--error-rate-500", "overloaded": "--overloaded-rate",
               "context_length": "--context-length-rate", "timeout": "--timeout-rate",
               "connection_drop": "--drop-rate"}
    try:
        faults = FaultProfile(latency_ms=latency_ms, rate_limit=error_rate_429,
                              server_error=error_rate_500, overloaded=overloaded_rate,
                              context_length=context_length_rate, timeout=timeout_rate,
                              connection_drop=drop_rate)
    except ValidationError as exc:
        _fail("; ".join(f"{options.get(str(e['loc'][0]), 'rates') if e['loc'] else 'rates'}: "
                        f"{e['msg']}" for e in exc.errors()))

    def ready(bound: int) -> None:
        base, how = _reference_endpoint(wire, bound)
        console.print(f"serving reference models ({wire} wire) on {base} ({how}); faults: "
                      f"{faults.model_dump_json()}; Ctrl-C stops", markup=False)

    try:
        serve_forever(port, faults, seed, on_ready=ready, plays=plays,
                      wire=wire)  # type: ignore[arg-type]  # checked against WIRE_NAMES
    except OSError as exc:
        _fail(f"cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}")
    except ValueError as exc:
        _fail(f"--plays: {exc}")
    console.print("stopped")


def _reference_endpoint(wire: str, port: int) -> tuple[str, str]:
    """The api_base of a reference server and how a sweep reaches its golden model."""
    from pipeline.reference.reference import WIRE_OF_PROVIDER
    from pipeline.reference.wire import wire_named

    base = f"http://127.0.0.1:{port}{wire_named(wire).base_path}"
    (provider,) = [p for p, w in WIRE_OF_PROVIDER.items() if w == wire]
    return base, f"agentsweep run --model {provider}/golden --api-base {base}"


@app.command(name="verify-suite")
def verify_suite(
    suite: Annotated[list[Path] | None, typer.Option(
        "--suite", help="Scenario suite (JSONL); repeatable. Default: the default suites.")
    ] = None,
    catalog: Annotated[list[Path] | None, typer.Option(
        "--catalog", help="A folder of domain folders; repeatable.")] = None,
    memory_mode: Annotated[list[str] | None, typer.Option(
        "--memory-mode", help="Default: chat, summary, structured.")] = None,
    allow_unproven: Annotated[bool, typer.Option(
        "--allow-unproven", help="Verify a suite that declares no mutant catches too.")] = False,
    tools: Annotated[str, typer.Option(
        "--tools", help="sandbox or mock (tools answer from the cases' recordings).")
    ] = "sandbox",
) -> None:
    """Prove the checks: golden passes, each mutant is caught by its declared check."""
    from pipeline.catalog import CatalogError, bundled_suites, load_suites, set_extra_roots

    set_extra_roots(catalog or [])
    from pipeline.environment.sandbox import TOOLS_MODES
    from pipeline.sweep.grid import MEMORY_MODES
    from pipeline.verify.mutants import verify

    modes = memory_mode or list(MEMORY_MODES)
    unknown = set(modes) - set(MEMORY_MODES)
    if unknown:
        _fail(f"--memory-mode: unknown {sorted(unknown)}")
    if tools not in TOOLS_MODES:
        _fail(f"--tools: {tools!r} is not one of {', '.join(TOOLS_MODES)}")
    try:
        loaded = load_suites(suite or bundled_suites())
    except CatalogError as exc:
        _fail(str(exc))
    conditions = [s for s in loaded if s.kind == "conditions"]
    suites = [s for s in loaded if s.kind != "conditions"]
    unproven = [s.path for s in suites if not any(x.scenario.catches for x in s.scenarios)]
    if unproven and not allow_unproven:
        _fail(f"{unproven[0]}: the suite declares no mutant catches, so verifying it proves "
              "nothing about its checks (add catches to its scenarios, or --allow-unproven)")
    wrong = _verify_conditions(conditions, memory_mode or ["chat"]) if conditions else 0
    if not suites:
        if wrong:
            raise typer.Exit(ExitCode.BLOCKED)
        return
    cells = verify(suites, modes, tools=tools)  # type: ignore[arg-type]
    bad = _print_mutation_cells(cells)
    if bad or wrong:
        raise typer.Exit(ExitCode.BLOCKED)


def _print_mutation_cells(cells: list[Any]) -> int:
    """The mutation matrix (scenario x mode x reference model); the number of wrong cells."""
    models = sorted({c.model for c in cells}, key=lambda m: (m != "reference/golden", m))
    by_key = {(c.scenario_id, c.mode, c.model): c for c in cells}
    rows: list[list[Text]] = []
    for scenario_id, mode in sorted({(c.scenario_id, c.mode) for c in cells}):
        row = [text_cell(f"{scenario_id} / {mode}")]
        for model in models:
            cell = by_key[(scenario_id, mode, model)]
            row.append(text_cell(cell.label(), "green" if cell.ok else "bold red"))
        rows.append(row)
    print_table(console, ["scenario / mode", *(m.removeprefix("reference/") for m in models)],
                rows, "mutation verification: scenario x mode x reference model")
    bad = [c for c in cells if not c.ok]
    console.print(f"{len(cells)} cells, {len(bad)} wrong")
    for cell in bad:
        err_console.print(f"{cell.scenario_id} / {cell.mode} / {cell.model}: {cell.label()}",
                          markup=False)
    return len(bad)


@app.command(name="lint-suite")
def lint_suite(
    suite: Annotated[list[Path] | None, typer.Option(
        "--suite", help="Cases suite (JSONL); repeatable. Default: every cases suite.")
    ] = None,
    catalog: Annotated[list[Path] | None, typer.Option(
        "--catalog", help="A folder of domain folders; repeatable.")] = None,
) -> None:
    """Flag what a suite demands that the agent was never told (a test must not demand a
    convention the prompt does not state): a case's outcome code its domain's prompt never
    defines, a golden state field no prompt, tool or state-schema description mentions. Exit
    1 on a finding."""
    from pipeline.catalog import CatalogError, known_suites, load_suites, set_extra_roots
    from pipeline.catalog.contract_lint import lint_contract
    from pipeline.catalog.state_lint import lint_states

    set_extra_roots(catalog or [])
    try:
        suites = load_suites(suite or list(known_suites().values()))
    except CatalogError as exc:
        _fail(str(exc))
    cases = [s for s in suites if s.kind == "cases"]
    findings = [f for s in cases for f in lint_contract(s)]
    for finding in findings:
        err_console.print(finding.message(), markup=False)
    console.print(f"{sum(len(s.scenarios) for s in cases)} case(s) in {len(cases)} cases "
                  f"suite(s), {len(findings)} undefined outcome code(s)")
    untold = [f for s in suites for f in lint_states(s)]
    for state_finding in untold:
        err_console.print(state_finding.message(), markup=False)
    console.print(f"{len(suites)} suite(s), {len(untold)} golden state field(s) no prompt, "
                  "tool or state schema describes")
    if findings or untold:
        raise typer.Exit(ExitCode.BLOCKED)


def _verify_conditions(suites: list[Any], modes: list[str]) -> int:
    """Every reference condition agent's failure map against the one it must give; the number
    of wrong cells."""
    from pipeline.reference.condition_agents import CONDITION_AGENTS
    from pipeline.verify.conditions import verify_conditions

    checks = verify_conditions(suites, modes)  # type: ignore[arg-type]
    keys = list(dict.fromkeys((c.condition_id, c.mode) for c in checks))
    rows: list[list[Text]] = []
    for condition, mode in keys:
        row = [text_cell(f"{condition} / {mode}")]
        for agent in CONDITION_AGENTS:
            mine = [c for c in checks if (c.agent, c.condition_id, c.mode) ==
                    (agent, condition, mode)]
            bad = [c for c in mine if not c.ok]
            decision = next((c.actual for c in mine if c.column == "decision"), "?")
            row.append(text_cell(decision, "green") if not bad else text_cell(
                "; ".join(f"{c.column}: {c.actual} (expected {c.expected})" for c in bad),
                "bold red"))
        rows.append(row)
    print_table(console, ["condition / mode", *CONDITION_AGENTS], rows,
                "conditions verification: each reference agent's failure map (through the "
                "failure_map view)")
    wrong = [c for c in checks if not c.ok]
    console.print(f"{len(checks)} map cells, {len(wrong)} wrong")
    for check in wrong:
        err_console.print(f"{check.agent} / {check.condition_id} / {check.mode} / {check.column}"
                          f": {check.actual} (expected {check.expected})", markup=False)
    return len(wrong)


@app.command()
def rescore(
    run_id: Annotated[str, typer.Option("--run-id", help="The run to score again.")],
    new_run_id: Annotated[str, typer.Option("--as", help="Run id of the rescored copy.")],
) -> None:
    """Score a run's stored traces again with today's checks, offline, as a new run."""
    from pipeline.stored.rescore import rescore_run
    from warehouse.query import run_named
    from warehouse.writer import WarehouseError, validate_run_id

    known_runs(("--run-id", run_id))
    root = hygiene.warehouse_root()
    try:
        validate_run_id(new_run_id)
    except WarehouseError as exc:
        _fail(f"--as: {exc}")
    if run_named(root, "trial_count", {"run_id": new_run_id}).rows[0][0]:
        _fail(f"--as: run {new_run_id!r} already exists")
    outcome = rescore_run(root, run_id, new_run_id)
    if not outcome.rescored:
        _fail(f"--run-id: run {run_id!r} has no scorable trial")
    console.print(f"rescored {outcome.rescored} trial(s) of {run_id} as {new_run_id} "
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
        _fail(f"no trial id starts with {trial_id!r}" + (f" in run {run_id!r}" if run_id else "")
              + " (a run's trial ids: agentsweep sql \"select trial_id, scenario_id from trials "
              "where run_id = 'R'\"; `agentsweep runs` lists the run ids)")
    if len(found) > 1:
        _fail(f"{len(found)} trials match {trial_id!r}: "
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
        err_console.print(f"{item.path}: {item.problem}", markup=False, soft_wrap=True)
    console.print(f"{count} file(s) under {root}: {len(damaged)} damaged", markup=False)
    left = leftover_paths(root)
    remover = ("`agentsweep warehouse compact` removes a run's" if isinstance(root, Path)
               else "`agentsweep warehouse vacuum` removes them")
    for path in left:
        err_console.print(f"{path}: leftover of an interrupted write or compaction (never "
                          f"read; {remover})", markup=False, soft_wrap=True)
    if left:
        console.print(f"{len(left)} leftover(s)", markup=False)
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
        _fail("warehouse vacuum is for a warehouse on object storage (AGENTSWEEP_WAREHOUSE="
              "s3://...); a folder's leftovers go with `agentsweep warehouse compact`")
        return
    removed = vacuum(root, timedelta(minutes=older_than))
    for item in removed:
        err_console.print(f"{root}/{item.key}: removed ({item.why})", markup=False,
                          soft_wrap=True)
    console.print(f"{len(removed)} object(s) removed from {root}", markup=False)


@warehouse_app.command(name="compact")
def warehouse_compact(
    run_id: Annotated[str | None, typer.Option(
        "--run-id", help="Only this run (default: every run).")] = None,
) -> None:
    """Rewrite each run's part files as a few large sorted files, swapped in whole; a run
    being run (its lock held) is left alone (exit 1)."""
    from pipeline.sweep.compaction import compact_runs
    from warehouse.compact import CompactionError
    from warehouse.writer import WarehouseError, validate_run_id

    root = hygiene.warehouse_root()
    try:
        done = compact_runs(root, None if run_id is None else [validate_run_id(run_id)])
    except (CompactionError, WarehouseError) as exc:
        _fail(str(exc))
    for run in done:
        if run.refused:
            err_console.print(run.refused, markup=False, soft_wrap=True)
            continue
        before = sum(t.files_before for t in run.tables)
        after = sum(t.files_after for t in run.tables)
        console.print(f"{run.run_id}: {before} file(s) -> {after}" if run.tables
                      else f"{run.run_id}: nothing to compact", markup=False)
    if any(run.refused for run in done):
        raise typer.Exit(ExitCode.BLOCKED)


@checks_app.command(name="calibrate")
def checks_calibrate(
    labels: Annotated[list[Path], typer.Option("--labels", help="Labels (JSONL); repeatable.")],
    run_id: Annotated[str | None, typer.Option("--run-id", help="Run in the warehouse.")] = None,
    traces: Annotated[Path | None, typer.Option(
        "--traces", help="Instead of --run-id: traces exported by `checks export`.")] = None,
) -> None:
    """Agreement of the checks with a person's verdicts: as recorded, and with today's checks."""
    from pipeline.catalog import CatalogError
    from pipeline.stored.calibrate import calibrate, load_labels, read_traces
    from pipeline.stored.trials import ScenarioIndex, stored_trials

    if (run_id is None) == (traces is None):
        _fail("give exactly one of --run-id and --traces")
    known_runs(("--run-id", run_id))
    try:
        loaded = load_labels(labels)
        trials = (read_traces(traces) if traces is not None
                  else stored_trials(hygiene.warehouse_root(), str(run_id)))
        wanted_run = run_id or (str(trials[0].row["run_id"]) if trials else "")
        mine = [label for label in loaded if label.run_id == wanted_run]
        if not mine:
            _fail(f"no label names run {wanted_run!r}")
        result = calibrate(mine, trials, ScenarioIndex())
    except (CatalogError, ValueError, OSError) as exc:
        _fail(str(exc))
    _print_calibration(result)


def _print_calibration(result: Any) -> None:
    rows: list[list[Any]] = []
    for source in ("recorded", "today"):
        kinds = result.by_kind.get(source, {})
        for kind in sorted(kinds):
            tally = kinds[kind]
            rows.append([source, kind, tally.labelled, tally.agree, f"{tally.agreement:.0%}",
                         tally.false_alarms, tally.misses])
        total = result.total(source)
        if total.labelled:
            rows.append([text_cell(source, "bold"), text_cell("all", "bold"), total.labelled,
                         total.agree, text_cell(f"{total.agreement:.1%}", "bold"),
                         total.false_alarms, total.misses])
    print_table(console, ("verdicts", "check kind", "labelled", "agree", "agreement",
                          "false alarms", "misses"), rows,
                f"check calibration: {result.trials} trial(s) read by a person")
    for item in result.disagreements:
        what = "false alarm" if not item.check_passed else "miss"
        label = item.label
        console.print(f"{item.source}: {what}: {label.scenario_id}/{label.memory_mode}/"
                      f"r{label.repeat} {label.check_id}: {item.detail} -- {label.note}",
                      markup=False)
    for source, labels in result.unmatched.items():
        console.print(f"{source}: {len(labels)} label(s) name a check these verdicts lack: "
                      + ", ".join(sorted({label.check_id for label in labels})), markup=False)


@checks_app.command(name="export")
def checks_export(
    run_id: Annotated[str, typer.Option("--run-id", help="Run in the warehouse.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="JSONL file to write.")],
    labels: Annotated[list[Path] | None, typer.Option(
        "--labels", help="Export only the trials these labels name.")] = None,
    force: Force = False,
) -> None:
    """Write a run's final trials (row, events, recorded checks) as JSONL, to keep beside
    their labels: `checks calibrate --traces` reads it without the warehouse."""
    from pipeline.catalog import CatalogError
    from pipeline.stored.calibrate import load_labels
    from pipeline.stored.trials import stored_trials
    from warehouse.atomic import write_text

    known_runs(("--run-id", run_id))
    checked_output(output, "-o", force)
    try:
        wanted = {label.trial_id for label in load_labels(labels)} if labels else None
    except CatalogError as exc:
        _fail(str(exc))
    trials = [t for t in stored_trials(hygiene.warehouse_root(), run_id)
              if wanted is None or str(t.row["trial_id"]) in wanted]
    if not trials:
        _fail(f"no trial of run {run_id!r} to export")
    text = "".join(t.to_json() + "\n" for t in trials)
    write_text(output, text)
    console.print(f"wrote {len(trials)} trial(s) to {output}")


def _print_rows(columns: list[str], rows: list[tuple[Any, ...]], output_format: str,
                title: str | None = None, narrowing: Narrowing = DEFAULT_NARROWING) -> None:
    from pipeline.cli.tables import print_rows

    print_rows(console, columns, rows, output_format, title, narrowing)


def first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0]


def _fail(message: str) -> None:
    err_console.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(ExitCode.BAD_INPUT)


def main() -> None:
    hygiene.apply()
    try:
        hygiene.check_home()
    except hygiene.HomeError as exc:
        err_console.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        raise SystemExit(ExitCode.BAD_INPUT) from None
    from warehouse.writer import WarehouseError

    try:
        app()
    except WarehouseError as exc:  # a file of the warehouse cannot be read: named, one line
        err_console.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        exit_within(ExitCode.BAD_INPUT)
        raise SystemExit(ExitCode.BAD_INPUT) from None
    except SystemExit as exc:  # the command has said how it ended: leave within seconds
        exit_within(exit_code_of(exc))
        raise
    except Exception:  # a bug: the interpreter prints the traceback and exits 1
        exit_within(1)
        raise


if __name__ == "__main__":
    main()
