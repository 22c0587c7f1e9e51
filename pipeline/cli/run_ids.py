"""The checks of a run id given on the command line: an unknown run id is one line naming it
and where the ids are listed, and exit 2 (never an empty table that reads as "no failures"); a
new run id is checked as it enters, naming its option; both before anything is read or
written."""

from __future__ import annotations

import typer

from pipeline.cli.tables import make_console
from pipeline.errors import ExitCode
from pipeline.runtime import hygiene
from warehouse.writer import RunId


def known_runs(*named: tuple[str, str | None]) -> None:
    """Exit 2 with one line for the first ``(option, run id)`` whose run the warehouse does not
    hold; a None run id (an option not given) is not checked."""
    from warehouse.query import unknown_run

    root = hygiene.warehouse_root()
    for option, run_id in named:
        problem = None if run_id is None else unknown_run(root, run_id)
        if problem is not None:
            make_console(stderr=True).print(f"error: {option}: {problem}", markup=False,
                                            highlight=False, soft_wrap=True)
            raise typer.Exit(ExitCode.BAD_INPUT)


def checked_run_id(option: str, run_id: str) -> RunId:
    """``run_id`` as given with ``option``; exit 2 with one line naming the option when it is
    not a usable run id."""
    from warehouse.writer import WarehouseError, validate_run_id

    try:
        return validate_run_id(run_id)
    except WarehouseError as exc:
        make_console(stderr=True).print(f"error: {option}: {exc}", markup=False,
                                        highlight=False, soft_wrap=True)
        raise typer.Exit(ExitCode.BAD_INPUT) from None
