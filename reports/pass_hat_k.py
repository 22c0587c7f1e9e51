"""``agentsweep report pass_hat_k``: a run's pass^k as tau2 computes it, per model x prompt x
memory mode, from ``warehouse/sql/pass_hat_k.sql`` (the SQL a user can run).

A scenario whose trials are all incomplete (infrastructure failures) has no pass^k and is left
out of its cell's mean, as tau2 leaves out such a task. CSV and JSON carry that on every row
(``scenarios_left_out``, ``left_out_scenarios``); the terminal table leaves those two columns
out and says the same once, in a note under the table, so a mean over fewer scenarios is never
read as one over all of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from warehouse.location import Root
from warehouse.query import run_named

LEFT_OUT_COLUMNS = ("scenarios_left_out", "left_out_scenarios")
"""The columns that say which scenarios a cell's mean leaves out (CSV and JSON only)."""
CELL = ("model", "prompt_id", "memory_mode")


@dataclass(frozen=True)
class PassHatK:
    """The report's rows, as the query returns them."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def table(self) -> tuple[list[str], list[list[Any]]]:
        """The columns and rows of the terminal table (without LEFT_OUT_COLUMNS)."""
        keep = [i for i, name in enumerate(self.columns) if name not in LEFT_OUT_COLUMNS]
        return ([self.columns[i] for i in keep],
                [[row[i] for i in keep] for row in self.rows])

    def note(self) -> str | None:
        """Which scenarios each cell leaves out, one line per such cell; None when none."""
        return left_out_note(self.records())


def load_pass_hat_k(root: Root, run_id: str) -> PassHatK:
    result = run_named(root, "pass_hat_k", {"run_id": run_id})
    return PassHatK(tuple(result.columns), tuple(tuple(row) for row in result.rows))


def left_out_note(records: Sequence[Mapping[str, Any]]) -> str | None:
    cells: dict[tuple[str, ...], Mapping[str, Any]] = {}
    for record in records:
        if record["scenarios_left_out"]:
            cells.setdefault(tuple(str(record[name]) for name in CELL), record)
    if not cells:
        return None
    return "\n".join(_note_line(cell, r) for cell, r in cells.items())


def _note_line(cell: tuple[str, ...], record: Mapping[str, Any]) -> str:
    count = int(record["scenarios_left_out"])
    model, prompt, memory = cell
    return (f"note: {count} scenario{'' if count == 1 else 's'} left out of pass^k, every "
            f"trial incomplete (infrastructure failures): model {model}, prompt {prompt}, "
            f"memory {memory}: {record['left_out_scenarios']}")
