"""``agentsweep import``: other benchmarks' data into our catalog format
(pipeline.interop.tau2_import)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipeline.cli.outputs import Force, checked_output
from pipeline.cli.run_ids import known_runs
from pipeline.cli.tables import make_console
from pipeline.errors import ExitCode

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Import another benchmark's data as a catalog domain and suite.")
export_app = typer.Typer(add_completion=False, no_args_is_help=True,
                         help="Export a run's trajectories in another benchmark's format.")


@app.command()
def tau2(
    source: Annotated[Path, typer.Argument(help="tau2's data/tau2/domains/retail folder.")],
    out: Annotated[Path, typer.Option("--out", help="The domain folder to write.")],
) -> None:
    """tau2-bench retail: tasks.json + db.json + policy.md -> a database domain and a suite."""
    from pipeline.interop.tau2_import import ImportFailed, import_tau2

    try:
        report = import_tau2(source, out)
    except ImportFailed as exc:
        make_console(stderr=True).print(f"error: {exc}", markup=False, highlight=False,
                                        soft_wrap=True)
        raise typer.Exit(ExitCode.BAD_INPUT) from None
    make_console().print(f"{report.tasks} tasks, {report.gold_actions} gold actions -> {out}: "
                         f"{', '.join(report.files)}", markup=False, highlight=False)


@export_app.command(name="tau2")
def export_tau2(
    run_id: Annotated[str, typer.Option("--run-id", help="The run to export.")],
    out: Annotated[Path | None, typer.Option("--out", help="Write here (default: stdout).")
                   ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Only this model's trials.")
                     ] = None,
    prompt: Annotated[str | None, typer.Option("--prompt", help="Only this prompt id's "
                                               "trials (e.g. tau2_retail/default).")] = None,
    memory_mode: Annotated[str | None, typer.Option("--memory-mode", help="Only this memory "
                                                    "mode's trials.")] = None,
    force: Force = False,
) -> None:
    """A run's trials as a tau2-bench results file, for `tau2 evaluate-trajs` (docs/tau2.md)."""
    import json

    from pipeline.interop.tau2_export import Selection, export_run, incomplete_warning
    from pipeline.runtime import hygiene
    from warehouse.atomic import write_text

    known_runs(("--run-id", run_id))
    checked_output(out, "--out", force)
    try:
        exported = export_run(hygiene.warehouse_root(), run_id,
                              Selection(model, prompt, memory_mode))
    except ValueError as exc:
        make_console(stderr=True).print(f"error: {exc}", markup=False, highlight=False,
                                        soft_wrap=True)
        raise typer.Exit(ExitCode.BAD_INPUT) from None
    warning = incomplete_warning(run_id, exported)
    if warning is not None:
        make_console(stderr=True).print(warning, markup=False, highlight=False, soft_wrap=True)
    text = json.dumps(exported, ensure_ascii=False, indent=1)
    if out is None:
        typer.echo(text)
    else:
        write_text(out, text + "\n")
        make_console().print(f"{len(exported['simulations'])} simulation(s), "
                             f"{len(exported['tasks'])} task(s) -> {out}",
                             markup=False, highlight=False)
