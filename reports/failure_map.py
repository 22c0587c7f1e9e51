"""The failure map of a run (the unstated-conditions method) as terminal tables: one per (model,
memory mode, prompt), rows = conditions grouped by type, columns = the five delivery formats and
the bare repeat, a cell = ``failures k/n``: k failures of n attempts (the title says so: every
other table's k/n counts passes); a zero always with its n and the rule-of-three bound. A row
whose allowed twin was not executed every time is greyed and says why it is not counted. The
numbers are the ``failure_map`` and ``condition_decisions`` views' (the SQL a user can run).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from warehouse.location import Root
from warehouse.query import run_named
from warehouse.schema import MAP_COLUMNS

Row = Mapping[str, Any]
SAID = (("silent_success", "silent"), ("incomplete_checklist", "checklist"),
        ("honest_report", "honest"))


def cell_text(k: int, n: int, upper_bound: float | None) -> str:
    """``k/n``; a zero as ``0/n (<= B%)`` with its rule-of-three bound; ``-`` when not played."""
    if n == 0:
        return "-"
    if k == 0 and upper_bound is not None:
        return f"0/{n} (<= {round(100 * upper_bound)}%)"
    return f"{k}/{n}"


@dataclass(frozen=True)
class MapGroup:
    """The map of one (model, memory mode, prompt) of a run."""

    key: tuple[str, str, str]
    cells: tuple[Row, ...]
    decisions: tuple[Row, ...]

    def provenance(self) -> str:
        first = self.cells[0]
        version = first["model_version"] or "not reported"
        return (f"model {first['model']} (version {version}), provider {first['provider']}, "
                f"channel {first['access_channel'] or 'unknown'}, temperature "
                f"{first['temperature']:g}, run date {first['run_date']}, memory "
                f"{first['memory_mode']}, prompt {first['prompt_id']}")


def _rows(root: Root, name: str, run_id: str) -> list[dict[str, Any]]:
    result = run_named(root, name, {"run_id": run_id})
    return [dict(zip(result.columns, row, strict=True)) for row in result.rows]


def load_failure_map(root: Root, run_id: str) -> list[MapGroup]:
    cells = _rows(root, "failure_map_run", run_id)
    decisions = _rows(root, "condition_decisions_run", run_id)

    def key(row: Row) -> tuple[str, str, str]:
        return (str(row["model"]), str(row["memory_mode"]), str(row["prompt_id"]))

    keys = list(dict.fromkeys(key(c) for c in cells))
    return [MapGroup(k, tuple(c for c in cells if key(c) == k),
                     tuple(d for d in decisions if key(d) == k)) for k in keys]


def _said(cells: Sequence[Row]) -> str:
    """The failures by what was said, and how many were made without reading first."""
    totals = {label: sum(int(c[name]) for c in cells) for name, label in SAID}
    said = ", ".join(f"{label} {count}" for label, count in totals.items() if count) or "-"
    unread = sum(int(c.get("failures_unread") or 0) for c in cells)
    return f"{said} ({unread} unread)" if unread else said


@dataclass(frozen=True)
class MapTable:
    """One group's map as a table to print: cells count failures (``failures k/n``)."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    row_styles: tuple[str, ...]
    """``dim`` for a row that is not counted (its allowed twin was not always executed)."""


def map_table(group: MapGroup) -> MapTable:
    rows, styles = [], []
    for decision in group.decisions:
        condition = decision["condition_id"]
        cells = {c["format"]: c for c in group.cells if c["condition_id"] == condition}
        texts = [cell_text(int(c["k"]), int(c["n"]), c["upper_bound"]) if c else "-"
                 for c in (cells.get(name) for name in MAP_COLUMNS)]
        twin = f"{decision['twin_k']}/{decision['twin_n']}"
        rows.append((str(decision["condition_type"]), str(condition), str(decision["enforced"]),
                     *texts, twin, _said(list(cells.values())),
                     f"{str(decision['decision']).replace('_', ' ')}: {decision['why']}"))
        styles.append("" if decision["counted"] else "dim")
    return MapTable(f"failure map, failures k/n (twin: executed k/n): {group.provenance()}",
                    ("type", "condition", "enforced", *MAP_COLUMNS, "twin", "said", "decision"),
                    tuple(rows), tuple(styles))


def excluded_note(groups: Sequence[MapGroup]) -> str | None:
    """Why rows are greyed, when some are (an always-refusing agent greys them all)."""
    excluded = [d for g in groups for d in g.decisions if not d["counted"]]
    total = sum(len(g.decisions) for g in groups)
    if not excluded:
        return None
    return (f"{len(excluded)} of {total} rows not counted (greyed): their allowed twin was not "
            "executed every time, so a refusal on the forbidden task may be a general refusal "
            "and says nothing about the condition")
