"""``agentsweep import``: other benchmarks' data into our catalog format (pipeline.importers)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipeline.tables import make_console

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Import another benchmark's data as a catalog domain and suite.")
EXIT_BAD_INPUT = 2


@app.command()
def tau2(
    source: Annotated[Path, typer.Argument(help="tau2's data/tau2/domains/retail folder.")],
    out: Annotated[Path, typer.Option("--out", help="The domain folder to write.")],
) -> None:
    """tau2-bench retail: tasks.json + db.json + policy.md -> a database domain and a suite."""
    from pipeline.importers import ImportFailed, import_tau2

    try:
        report = import_tau2(source, out)
    except ImportFailed as exc:
        make_console(stderr=True).print(f"error: {exc}", markup=False, highlight=False,
                                        soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    make_console().print(f"{report.tasks} tasks, {report.gold_actions} gold actions -> {out}: "
                         f"{', '.join(report.files)}", markup=False, highlight=False)
