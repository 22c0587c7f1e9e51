"""The ``checks`` group: calibrate the checks against a person's verdicts, export labels."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from pipeline.cli import terminal
from pipeline.cli.outputs import Force, checked_output
from pipeline.cli.run_ids import known_runs
from pipeline.cli.tables import cell as text_cell
from pipeline.cli.tables import print_table
from pipeline.cli.terminal import fail
from pipeline.runtime import hygiene

checks_app = typer.Typer(add_completion=False, no_args_is_help=True,
                         help="Calibrate the checks against a person's verdicts.")


@checks_app.command(name="calibrate")
def checks_calibrate(
    labels: Annotated[list[Path] | None, typer.Option(
        "--labels", help="Labels (JSONL); repeatable.")] = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Run in the warehouse.")] = None,
    traces: Annotated[Path | None, typer.Option(
        "--traces", help="Instead of --run-id: traces exported by `checks export`.")] = None,
    committed: Annotated[bool, typer.Option(
        "--committed", help="Every label set kept in the catalogs (<domain>/labels/<name>.jsonl "
        "with <name>.traces.jsonl), in one table.")] = False,
) -> None:
    """Agreement of the checks with a person's verdicts: as recorded, and with today's checks."""
    from pipeline.catalog import CatalogError
    from pipeline.stored.calibrate import calibrate, load_labels, read_traces
    from pipeline.stored.trials import ScenarioIndex, stored_trials

    if committed:
        if labels or run_id is not None or traces is not None:
            fail("--committed reads the catalogs' own label sets: give no --labels, --run-id "
                 "or --traces with it")
        _calibrate_committed()
        return
    if not labels:
        fail("give --labels (or --committed)")
    if (run_id is None) == (traces is None):
        fail("give exactly one of --run-id and --traces")
    known_runs(("--run-id", run_id))
    try:
        loaded = load_labels(labels or [])
        trials = (read_traces(traces) if traces is not None
                  else stored_trials(hygiene.warehouse_root(), str(run_id)))
        wanted_run = run_id or (str(trials[0].row["run_id"]) if trials else "")
        mine = [label for label in loaded if label.run_id == wanted_run]
        if not mine:
            fail(f"no label names run {wanted_run!r}")
        result = calibrate(mine, trials, ScenarioIndex())
    except (CatalogError, ValueError, OSError) as exc:
        fail(str(exc))
    _print_calibration(result)


def _calibrate_committed() -> None:
    from pipeline.catalog import CatalogError
    from pipeline.catalog.domains import catalog_roots
    from pipeline.stored.calibrate import calibrate_sets, committed_label_sets
    from pipeline.stored.trials import ScenarioIndex

    sets = committed_label_sets(catalog_roots())
    if not sets:
        fail("no label set in the catalogs (<domain>/labels/<name>.jsonl beside "
             "<name>.traces.jsonl)")
    try:
        result = calibrate_sets(sets, ScenarioIndex())
    except (CatalogError, ValueError, OSError) as exc:
        fail(str(exc))
    terminal.console.print(f"{len(sets)} label set(s): " + ", ".join(s.name for s in sets),
                           markup=False)
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
    print_table(terminal.console, ("verdicts", "check kind", "labelled", "agree", "agreement",
                          "false alarms", "misses"), rows,
                f"check calibration: {result.trials} trial(s) read by a person")
    for item in result.disagreements:
        what = "false alarm" if not item.check_passed else "miss"
        label = item.label
        origin = f"{item.origin}: " if item.origin else ""
        terminal.console.print(f"{item.source}: {what}: {origin}{label.scenario_id}/"
                               f"{label.memory_mode}/"
                               f"r{label.repeat} {label.check_id}: {item.detail} -- {label.note}",
                               markup=False)
    for source, labels in result.unmatched.items():
        terminal.console.print(
            f"{source}: {len(labels)} label(s) name a check these verdicts lack: "
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
        fail(str(exc))
    trials = [t for t in stored_trials(hygiene.warehouse_root(), run_id)
              if wanted is None or str(t.row["trial_id"]) in wanted]
    if not trials:
        fail(f"no trial of run {run_id!r} to export")
    text = "".join(t.to_json() + "\n" for t in trials)
    write_text(output, text)
    terminal.console.print(f"wrote {len(trials)} trial(s) to {output}")
