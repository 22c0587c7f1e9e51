"""How a table fits a terminal's width: each column's width, or a record layout when the
columns cannot all be read side by side.

A column whose values have no space in them (ids, models, scenarios, counts, ``k/n``) is an
atom: it never wraps (``no_wrap``) and keeps its longest value whole; only when the table does
not fit so, an atom longer than ``ATOM_CAP`` cells ends with ``…`` (``overflow="ellipsis"``).
A column of text wraps between words, never narrower than ``TEXT_MIN`` cells (or its longest
value). When the atoms and the narrowest
text columns do not fit, the table is printed as records: one block per row, a
``column: value`` line per column (``record_layout``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

ATOM_CAP = 48
"""An atom longer than this is cut with ``…`` in a table (csv / json / records give it all)."""
TEXT_MIN = 16
"""A text column is never narrower than this (nor than its longest word, up to this)."""


@dataclass(frozen=True)
class ColumnFit:
    """One column's layout: its width in cells and whether it wraps."""

    width: int
    min_width: int
    atom: bool


def _words(text: str) -> list[str]:
    return text.split() or [""]


def _fit(header: Text, values: Sequence[Text], cap: int | None) -> ColumnFit:
    plain = [v.plain for v in values]
    if all(len(_words(v)) == 1 for v in plain):
        width = max(cell_len(v) for v in [header.plain, *plain])
        width = width if cap is None else min(cap, width)
        return ColumnFit(width, width, atom=True)
    widest = max(cell_len(v) for v in [header.plain, *plain])
    longest_word = max(cell_len(w) for v in plain for w in _words(v))
    header_word = max(cell_len(w) for w in _words(header.plain))
    least = max(header_word, min(widest, max(longest_word, TEXT_MIN)))
    return ColumnFit(widest, min(least, widest), atom=False)


def overhead(columns: int) -> int:
    """Cells a rich table spends on borders and padding: two of padding and one border per
    column, and the closing border."""
    return 3 * columns + 1


def column_fits(headers: Sequence[Text], rows: Sequence[Sequence[Text]],
                width: int) -> list[ColumnFit] | None:
    """Each column's width within ``width``, or None when the columns cannot all be read."""
    room = width - overhead(len(headers))
    for cap in (None, ATOM_CAP):
        fits = [_fit(h, [row[i] for row in rows], cap) for i, h in enumerate(headers)]
        if sum(f.min_width for f in fits) <= room:
            return _share(fits, room)
    return None


def _share(fits: list[ColumnFit], room: int) -> list[ColumnFit]:
    """Text columns start at their least width and grow, the most cut first, into the room
    the atoms leave."""
    widths = [f.min_width for f in fits]
    spare = room - sum(widths)
    while spare > 0:
        growable = [i for i, f in enumerate(fits) if widths[i] < f.width]
        if not growable:
            break
        cut = max(growable, key=lambda i: (fits[i].width - widths[i]) / fits[i].width)
        widths[cut] += 1
        spare -= 1
    return [ColumnFit(w, f.min_width, f.atom) for w, f in zip(widths, fits, strict=True)]


def fitted_table(title: Text | None, headers: Sequence[Text], rows: Sequence[Sequence[Text]],
                 fits: Sequence[ColumnFit], row_styles: Sequence[str] | None = None) -> Table:
    table = Table(title=title, title_justify="left")
    for header, fit in zip(headers, fits, strict=True):
        table.add_column(header, width=fit.width, min_width=fit.min_width, no_wrap=fit.atom,
                         overflow="ellipsis" if fit.atom else "fold")
    for i, row in enumerate(rows):
        table.add_row(*row, style=row_styles[i] if row_styles else None)
    return table


def record_layout(headers: Sequence[Text], rows: Sequence[Sequence[Text]],
                  row_styles: Sequence[str] | None = None) -> list[Text]:
    """One block per row, a ``column: value`` line per column (names padded to one width), a
    blank line between blocks."""
    pad = max(cell_len(h.plain) for h in headers) + 2
    lines: list[Text] = []
    for i, row in enumerate(rows):
        if i:
            lines.append(Text())
        style = row_styles[i] if row_styles else ""
        for header, value in zip(headers, row, strict=True):
            name = Text.assemble(header, ":")
            name.pad_right(pad - cell_len(name.plain))
            lines.append(Text.assemble(name, value, style=style))
    return lines
