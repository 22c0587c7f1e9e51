"""The command line's two consoles and what every command says the same way: a refusal
(one line, exit 2) and rows as a table, CSV or JSON. Commands read ``console`` through this
module (``terminal.console``), so a test may put one of another width in its place."""

from __future__ import annotations

from typing import Any

import typer

from pipeline.cli.fit import DEFAULT_NARROWING, Narrowing
from pipeline.cli.tables import make_console
from pipeline.errors import ExitCode

console = make_console()
err_console = make_console(stderr=True)


def print_rows(columns: list[str], rows: list[tuple[Any, ...]], output_format: str,
               title: str | None = None, narrowing: Narrowing = DEFAULT_NARROWING) -> None:
    from pipeline.cli.tables import print_rows as printed

    printed(console, columns, rows, output_format, title, narrowing)


def first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0]


def fail(message: str) -> None:
    err_console.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(ExitCode.BAD_INPUT)
