"""The ``agentsweep`` command line: the root command, its groups and the entry point. The
commands live in ``pipeline.cli.commands`` (one module per group) and the sub-apps beside."""

from __future__ import annotations

from typing import Annotated

import typer

from pipeline.cli import terminal
from pipeline.cli.commands import bench, checks, decisions, reports, sweeps, warehouse
from pipeline.cli.interop import app as import_app
from pipeline.cli.interop import export_app
from pipeline.cli.judge import app as judge_app
from pipeline.cli.local_model import app as local_model_app
from pipeline.errors import ExitCode
from pipeline.runtime import hygiene
from pipeline.runtime.bounded_exit import exit_code_of, exit_within

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_show_locals=False,
                  help="Evaluate tool-calling agents over whole dialogs, many times.")
for commands in (sweeps.app, decisions.app, warehouse.app, reports.app, bench.app):
    app.add_typer(commands)
app.add_typer(local_model_app, name="local-model")
app.add_typer(import_app, name="import")
app.add_typer(export_app, name="export")
app.add_typer(judge_app, name="judge")
app.add_typer(checks.checks_app, name="checks")
app.add_typer(warehouse.warehouse_app, name="warehouse")


def _version(value: bool) -> None:
    if value:
        from pipeline.util.version import code_version

        terminal.console.print(f"agentsweep {code_version()}", markup=False)
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Evaluate tool-calling agents over whole dialogs, many times."""


def main() -> None:
    hygiene.apply()
    try:
        hygiene.check_home()
    except hygiene.HomeError as exc:
        terminal.err_console.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        raise SystemExit(ExitCode.BAD_INPUT) from None
    from warehouse.writer import WarehouseError

    try:
        app()
    except WarehouseError as exc:  # a file of the warehouse cannot be read: named, one line
        terminal.err_console.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        exit_within(ExitCode.BAD_INPUT)
        raise SystemExit(ExitCode.BAD_INPUT) from None
    except SystemExit as exc:  # the command has said how it ended: leave within seconds
        exit_within(exit_code_of(exc))
        raise
    except Exception:
        unusable = _unusable_bucket()
        if unusable is not None:  # a command met a bucket it cannot use: said in one line
            terminal.err_console.print(f"error: {unusable}", markup=False, highlight=False,
                                       soft_wrap=True)
            exit_within(ExitCode.BAD_INPUT)
            raise SystemExit(ExitCode.BAD_INPUT) from None
        exit_within(1)  # a bug: the interpreter prints the traceback and exits 1
        raise


def _unusable_bucket() -> str | None:
    """Why the warehouse's bucket cannot be used (missing, refused, no answer), when the
    warehouse is one; None otherwise (a folder, or a bucket that answers)."""
    from warehouse.location import S3Location
    from warehouse.reach import WarehouseUnreachable, check_reach

    try:
        root = hygiene.warehouse_root()
        if isinstance(root, S3Location):
            check_reach(root)
    except WarehouseUnreachable as exc:
        return str(exc)
    except Exception:  # the check itself failed: leave the original error as it was
        return None
    return None

if __name__ == "__main__":
    main()
