"""The trials of a run that already have a final outcome, held compactly for a resume.

A resume asks of every trial of its grid whether it is done. A night has a million of them: as
a Python set of id strings that is ~150 MiB, and reading it row by row costs seconds. A trial id
is 32 hex digits (``pipeline.trial.spec.trial_id_for``), so it is held as two unsigned 64-bit
halves in two sorted ``array('Q')`` (16 bytes a trial), read from DuckDB as Arrow columns, and
looked up by bisection. An id of any other form (none the grid makes) is held as itself.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Container, Iterable

import pyarrow as pa
import pyarrow.compute as pc

from warehouse.location import Root

HEX_ID_DIGITS = 32


def _halves(trial_id: str) -> tuple[int, int] | None:
    """An id's two 64-bit halves, or None when it is not 32 lowercase hex digits."""
    if len(trial_id) != HEX_ID_DIGITS or trial_id.lower() != trial_id:
        return None
    try:
        return int(trial_id[:16], 16), int(trial_id[16:], 16)
    except ValueError:
        return None


def _uint64s(column: pa.ChunkedArray) -> array[int]:
    """A uint64 column without nulls as an ``array('Q')``, copied from its buffers."""
    out: array[int] = array("Q")
    for chunk in column.chunks:
        values = chunk.buffers()[1]
        if values is not None and len(chunk):
            width = out.itemsize
            out.frombytes(values[chunk.offset * width:(chunk.offset + len(chunk)) * width])
    return out


class DoneTrials(Container[str]):
    """Final trials of a run: ``trial_id in done``; ``len(done)`` how many."""

    def __init__(self, high: array[int], low: array[int], others: Iterable[str] = ()) -> None:
        """``high`` and ``low``: the ids' halves, sorted by (high, low)."""
        self._high = high
        self._low = low
        self._others = frozenset(others)

    @classmethod
    def of(cls, trial_ids: Iterable[str]) -> DoneTrials:
        """From ids in memory (tests, small runs)."""
        pairs: list[tuple[int, int]] = []
        others: list[str] = []
        for trial_id in set(trial_ids):
            halves = _halves(trial_id)
            if halves is None:
                others.append(trial_id)
            else:
                pairs.append(halves)
        pairs.sort()
        return cls(array("Q", [h for h, _ in pairs]), array("Q", [lo for _, lo in pairs]), others)

    @classmethod
    def from_arrow(cls, table: pa.Table) -> DoneTrials:
        """From ``final_trial_keys.sql``'s result: sorted halves, and the other ids whole."""
        hex_rows = table.filter(pc.is_null(table["other"]))
        others = table.filter(pc.is_valid(table["other"]))["other"].to_pylist()
        return cls(_uint64s(hex_rows["high"]), _uint64s(hex_rows["low"]), others)

    def __contains__(self, trial_id: object) -> bool:
        if not isinstance(trial_id, str):
            return False
        halves = _halves(trial_id)
        if halves is None:
            return trial_id in self._others
        high, low = halves
        at = bisect_left(self._high, high)
        while at < len(self._high) and self._high[at] == high:
            if self._low[at] == low:
                return True
            at += 1
        return False

    def __len__(self) -> int:
        return len(self._high) + len(self._others)

    @property
    def nbytes(self) -> int:
        """Bytes the hex ids take (the others not counted)."""
        return (len(self._high) + len(self._low)) * self._high.itemsize


NOTHING_DONE = DoneTrials(array("Q"), array("Q"))
"""A new run's done set."""


def done_trials(root: Root, run_id: str) -> DoneTrials:
    """The run's trials that have a final outcome (anything but incomplete)."""
    from warehouse.query import run_named_arrow  # duckdb: only the driver needs it

    return DoneTrials.from_arrow(run_named_arrow(root, "final_trial_keys", {"run_id": run_id}))
