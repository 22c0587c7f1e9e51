"""The ``--force`` option and the output check every exporting command shares
(pipeline.runtime.outputs): a refused path is one line and exit 2, before anything runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipeline.cli.tables import make_console
from pipeline.errors import ExitCode
from pipeline.runtime.outputs import OutputRefused, check_output

Force = Annotated[bool, typer.Option(
    "--force", help="Replace the output file if it exists (never one inside AGENTSWEEP_HOME "
    "or the warehouse).")]


def checked_output(path: Path | None, option: str, force: bool) -> None:
    """Exit 2 with one line when ``option`` may not write to ``path`` (None: nothing to
    check)."""
    if path is None:
        return
    try:
        check_output(path, option, force)
    except OutputRefused as exc:
        make_console(stderr=True).print(f"error: {exc}", markup=False, highlight=False,
                                        soft_wrap=True)
        raise typer.Exit(ExitCode.BAD_INPUT) from None
