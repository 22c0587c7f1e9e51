"""Tables for the terminal (and CSV / JSON for pipes): they fit the width, never split a word.

The width is the terminal's, else ``COLUMNS``, else 200 when output is piped. An id, a model, a
scenario or a count is never wrapped (a model name is never cut to ``refer``/``ence``); text
wraps between words. A table too wide for the terminal stays a table: it says the columns with
one value on every row once in its title, leaves out the columns its caller calls spare, then
cuts ids and leaves out columns from the right, naming in its title what it left out
(pipeline.cli.fit). A summary drops the columns whose value is the same on every row and says
them once in the title at any width.

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

from pipeline.cli.fit import (
    DEFAULT_NARROWING,
    Layout,
    Narrowing,
    fitted_table,
    layout,
    table_width,
)
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
                title: str | None = None, row_styles: Sequence[str] | None = None,
                narrowing: Narrowing = DEFAULT_NARROWING) -> None:
    """A table that fits the console's width; its title names the columns it could not show."""
    headers = [cell(c) for c in columns]
    texts = [[cell(v) for v in row] for row in rows]
    plan = layout(headers, texts, console.width, narrowing)
    table = fitted_table([headers[i] for i in plan.shown],
                         [[row[i] for i in plan.shown] for row in texts], plan.fits, row_styles)
    shown_title = _title(title, headers, texts, plan)
    if shown_title is not None and shown_title.cell_len <= table_width(plan.fits):
        table.title = shown_title
    elif shown_title is not None:  # wider than the table: one line of the console's width
        console.print(shown_title)
    console.print(table)


def _title(title: str | None, headers: Sequence[Text], rows: Sequence[Sequence[Text]],
           plan: Layout) -> Text | None:
    """The title, with the columns said once (same value on every row) and those left out."""
    said = [f"{headers[i].plain} {rows[0][i].plain}" if rows[0][i].plain
            else f"no {headers[i].plain}" for i in plan.constant]
    notes = ", ".join(said)
    if plan.hidden:
        left_out = ", ".join(headers[i].plain for i in plan.hidden)
        notes += ("; " if notes else "") + f"not shown: {left_out}"
    if not notes:
        return None if title is None else cell(title)
    return cell(f"{title} ({notes})" if title is not None else f"({notes})")


def print_rows(console: Console, columns: Sequence[str], rows: Sequence[Sequence[Any]],
               output_format: str, title: str | None = None,
               narrowing: Narrowing = DEFAULT_NARROWING) -> None:
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
        print_table(console, columns, rows, title, narrowing=narrowing)


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
