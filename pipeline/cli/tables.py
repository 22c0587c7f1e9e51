"""Tables for the terminal (and CSV / JSON for pipes): they fit the width, never split a word.

The width is the terminal's, else ``COLUMNS``, else 200 when output is piped. An id, a model, a
scenario or a count is never wrapped (a model name is never cut to ``refer``/``ence``); text
wraps between words; when the columns cannot all be read side by side the table prints as
records, one block of ``column: value`` lines per row (pipeline.cli.fit). A summary drops the
columns whose value is the same on every row and says them once in the title.

Data is never markup: the consoles are made with ``markup=False`` (and no emoji codes), so a
stored ``[/x]`` or ``[link=...]`` prints as written; every cell, header and title of a table
goes through ``cell`` (a ``rich.text.Text``), which also shows bidi controls and zero-width
characters as ``<U+202E>`` (pipeline.util.untrusted.visible). Styles are given as ``Text``
styles, never as markup in a string.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from pipeline.cli.fit import column_fits, fitted_table, record_layout
from pipeline.util.untrusted import visible

PIPED_WIDTH = 200


def make_console(stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and int(columns) > 20 else None
    if width is None and not stream.isatty():
        width = PIPED_WIDTH
    return Console(stderr=stderr, width=width, markup=False, emoji=False)


def cell(value: Any, style: str = "") -> Text:
    """A table cell (or header, or title) as text, never markup; None as ``∅``. A ``Text``
    (a styled cell) is kept as it is."""
    if isinstance(value, Text):
        return value
    return Text(visible("∅" if value is None else str(value)), style=style)


def print_table(console: Console, columns: Sequence[Any], rows: Sequence[Sequence[Any]],
                title: str | None = None, row_styles: Sequence[str] | None = None) -> None:
    """A table that fits the console's width, or its rows as records when it cannot."""
    headers = [cell(c) for c in columns]
    texts = [[cell(v) for v in row] for row in rows]
    shown_title = cell(title) if title is not None else None
    fits = column_fits(headers, texts, console.width)
    if fits is not None:
        console.print(fitted_table(shown_title, headers, texts, fits, row_styles))
        return
    if shown_title is not None:
        console.print(shown_title)
    for line in record_layout(headers, texts, row_styles) if texts else [cell("(no rows)")]:
        console.print(line, overflow="fold")


def print_rows(console: Console, columns: Sequence[str], rows: Sequence[Sequence[Any]],
               output_format: str, title: str | None = None) -> None:
    if output_format == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
        sys.stdout.write(buffer.getvalue())
    elif output_format == "json":
        records = [dict(zip(columns, row, strict=True)) for row in rows]
        sys.stdout.write(json.dumps(records, default=str, ensure_ascii=False, indent=2) + "\n")
    else:
        columns, rows = without_builtin_agent(columns, rows)
        print_table(console, columns, rows, title)


BUILTIN_AGENT = "builtin"


def without_builtin_agent(columns: Sequence[str], rows: Sequence[Sequence[Any]]
                          ) -> tuple[list[str], list[list[Any]]]:
    """A terminal table leaves out an ``agent`` column that only says ``builtin`` (every run
    without an external agent): CSV and JSON keep it."""
    if "agent" not in columns:
        return list(columns), [list(r) for r in rows]
    index = list(columns).index("agent")
    if any(r[index] not in (BUILTIN_AGENT, None) for r in rows):
        return list(columns), [list(r) for r in rows]
    return ([c for i, c in enumerate(columns) if i != index],
            [[v for i, v in enumerate(r) if i != index] for r in rows])


def print_summary(console: Console, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                  title: str) -> None:
    """Rows with the columns that never vary said once in the title (when rows > 1)."""
    columns, rows = without_builtin_agent(columns, rows)
    keep = list(range(len(columns)))
    constant: list[str] = []
    if len(rows) > 1:
        keep = [i for i in range(len(columns)) if len({str(r[i]) for r in rows}) > 1
                or columns[i] in ("k", "n", "pass_rate")]
        constant = [f"{columns[i]} {rows[0][i]}" for i in range(len(columns)) if i not in keep]
    shown_title = title + (f" ({', '.join(constant)})" if constant else "")
    print_rows(console, [columns[i] for i in keep], [[r[i] for i in keep] for r in rows],
               "table", title=shown_title)
