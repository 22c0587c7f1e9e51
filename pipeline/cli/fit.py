"""How a table fits a terminal's width: which columns it shows, each one's width, and which
columns its title names instead. A table stays a table at any width (never a block of
``column: value`` lines per row): it gives up, in this order, what it cannot hold.

A column whose values have no space in them (ids, models, scenarios, counts, ``k/n``) is an
atom: it never wraps (``no_wrap``) and is cut with ``…`` when narrower than its longest value.
A column of text wraps between words, never narrower than ``TEXT_MIN`` cells (or its longest
word). When the table does not fit whole:

1. an atom longer than ``ATOM_CAP`` cells is cut;
2. the columns whose value is the same on every row are said once in the title;
3. the columns the caller names as spare are left out, in its order;
4. a header wraps at ``_`` and the atoms are cut, no shorter than ``SHORT_CAP`` cells;
5. columns are left out from the right (the first one never).

The columns the caller names as whole (a run id to copy) are never cut nor left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

ATOM_CAP = 48
"""An atom longer than this is cut with ``…`` in a table (csv / json give it all)."""
SHORT_CAP = 16
"""When even that does not fit, an atom is cut down to this, no shorter."""
TEXT_MIN = 16
"""A text column is never narrower than this (nor than its longest word, up to this)."""


@dataclass(frozen=True)
class Narrowing:
    """What a table's caller says about its columns (named by header) for a narrow terminal."""

    spare: tuple[str, ...] = ()
    """Left out first, in this order, before any id is cut."""
    whole: tuple[str, ...] = ()
    """Never cut nor left out."""


DEFAULT_NARROWING = Narrowing()
"""Nothing spare, nothing whole: the generic order alone."""


@dataclass(frozen=True)
class ColumnFit:
    """One column's layout: its width in cells and whether it wraps."""

    width: int
    min_width: int
    atom: bool


@dataclass(frozen=True)
class Layout:
    """The columns a table shows (indices) and their fits; the columns said once in the title
    (same value on every row) and those left out."""

    shown: tuple[int, ...]
    fits: tuple[ColumnFit, ...]
    constant: tuple[int, ...] = ()
    hidden: tuple[int, ...] = ()


@dataclass(frozen=True)
class _Column:
    """A column's measures, taken once."""

    header: int
    header_word: int
    header_piece: int
    values: int
    longest_word: int
    atom: bool
    whole: bool


def _words(text: str) -> list[str]:
    return text.split() or [""]


def _header_pieces(header: str) -> list[str]:
    """A header's wrap points: between words and after each ``_`` (``agent_``, ``errors``)."""
    return re.findall(r"[^_\s]*_+\s*|[^_\s]+\s*", header) or [""]


def _measure(header: Text, values: Sequence[Text], whole: bool) -> _Column:
    plain = [v.plain for v in values]
    return _Column(
        header=cell_len(header.plain),
        header_word=max(cell_len(w) for w in _words(header.plain)),
        header_piece=max(cell_len(p.rstrip()) for p in _header_pieces(header.plain)),
        values=max((cell_len(v) for v in plain), default=0),
        longest_word=max((cell_len(w) for v in plain for w in _words(v)), default=0),
        atom=all(len(_words(v)) == 1 for v in plain), whole=whole)


def _fit(column: _Column, cap: int | None, narrow: bool) -> ColumnFit:
    widest = max(column.header, column.values)
    header_least = column.header_piece if narrow else column.header_word
    if column.atom and not narrow:
        width = widest if cap is None or column.whole else min(cap, widest)
        return ColumnFit(width, width, atom=True)
    if column.atom:
        values = column.values if cap is None or column.whole else min(cap, column.values)
        return ColumnFit(widest, max(values, header_least), atom=True)
    widest_least = column.values if narrow else widest  # narrow: the header wraps
    least = max(header_least, min(widest_least, max(column.longest_word, TEXT_MIN)))
    return ColumnFit(widest, min(least, widest), atom=False)


def overhead(columns: int) -> int:
    """Cells a rich table spends on borders and padding: two of padding and one border per
    column, and the closing border."""
    return 3 * columns + 1


def _fits(columns: Sequence[_Column], width: int, cap: int | None,
          narrow: bool) -> list[ColumnFit] | None:
    room = width - overhead(len(columns))
    fits = [_fit(c, cap, narrow) for c in columns]
    return _share(fits, room) if sum(f.min_width for f in fits) <= room else None


def _share(fits: list[ColumnFit], room: int) -> list[ColumnFit]:
    """Columns start at their least width and grow, the most cut first, into the room left."""
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


def _constant(columns: Sequence[_Column], rows: Sequence[Sequence[Text]]) -> tuple[int, ...]:
    """The columns (but the first and the whole ones) with one value on every row, of 2+."""
    if len(rows) < 2:
        return ()
    return tuple(i for i in range(1, len(columns)) if not columns[i].whole
                 and len({row[i].plain for row in rows}) == 1)


def _attempts(columns: Sequence[_Column], headers: Sequence[str], constant: tuple[int, ...],
              spare: Sequence[str]) -> Iterator[tuple[list[int], bool]]:
    """The columns to try, narrow or not, each attempt giving up more than the last."""
    shown = [i for i in range(len(columns)) if i not in constant]
    yield shown, False
    for i in [headers.index(name) for name in spare if name in headers]:
        if i in shown[1:] and not columns[i].whole:
            shown = [s for s in shown if s != i]
            yield shown, False
    yield shown, True
    for i in [i for i in reversed(shown[1:]) if not columns[i].whole]:
        shown = [s for s in shown if s != i]
        yield shown, True


def layout(headers: Sequence[Text], rows: Sequence[Sequence[Text]], width: int,
           narrowing: Narrowing = DEFAULT_NARROWING) -> Layout:
    """The columns shown within ``width`` and their widths; the rest named in the title."""
    names = [h.plain for h in headers]
    columns = [_measure(h, [row[i] for row in rows], names[i] in narrowing.whole)
               for i, h in enumerate(headers)]
    every = tuple(range(len(columns)))
    for cap in (None, ATOM_CAP):
        fits = _fits(columns, width, cap, narrow=False)
        if fits is not None:
            return Layout(every, tuple(fits))
    constant = _constant(columns, rows)
    shown, narrow = every, True
    for shown_list, narrow in _attempts(columns, names, constant, narrowing.spare):
        shown = tuple(shown_list)
        fits = _fits([columns[i] for i in shown], width, SHORT_CAP if narrow else ATOM_CAP,
                     narrow)
        if fits is not None:
            break
    if fits is None:  # the first and whole columns alone are wider than the terminal
        fits = [_fit(columns[i], SHORT_CAP, narrow=True) for i in shown]
    hidden = tuple(i for i in every if i not in shown and i not in constant)
    return Layout(shown, tuple(fits), constant, hidden)


def _wrapped_header(header: Text, width: int) -> Text:
    """A header on as many lines of ``width`` as it needs, broken at spaces and after ``_``."""
    if cell_len(header.plain) <= width:
        return header
    lines = [""]
    for piece in _header_pieces(header.plain):
        if lines[-1] and cell_len((lines[-1] + piece).rstrip()) > width:
            lines.append("")
        lines[-1] += piece
    return Text("\n".join(line.rstrip() for line in lines), style=header.style)


def fitted_table(headers: Sequence[Text], rows: Sequence[Sequence[Text]],
                 fits: Sequence[ColumnFit], row_styles: Sequence[str] | None = None) -> Table:
    table = Table(title_justify="left")
    for header, fit in zip(headers, fits, strict=True):
        table.add_column(_wrapped_header(header, fit.width), width=fit.width,
                         min_width=fit.min_width, no_wrap=fit.atom,
                         overflow="ellipsis" if fit.atom else "fold")
    for i, row in enumerate(rows):
        table.add_row(*row, style=row_styles[i] if row_styles else None)
    return table


def table_width(fits: Sequence[ColumnFit]) -> int:
    return sum(f.width for f in fits) + overhead(len(fits))
