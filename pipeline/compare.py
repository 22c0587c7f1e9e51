"""Baseline vs candidate: per-cell k/n transitions between two runs, written as a CSV report.

The query is ``warehouse/sql/compare_runs.sql``; this module runs it, names the report file and
writes it atomically (``warehouse.atomic``).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warehouse.atomic import atomic_text
from warehouse.query import run_named
from warehouse.writer import validate_run_id

NIGHTLY_PREFIX = "nightly-"


@dataclass(frozen=True)
class Comparison:
    baseline: str
    candidate: str
    columns: list[str]
    rows: list[tuple[Any, ...]]
    report: Path | None = None

    def changes(self) -> dict[str, int]:
        """How many cells regressed, improved, stayed the same, ..."""
        index = self.columns.index("change")
        counts: dict[str, int] = {}
        for row in self.rows:
            counts[row[index]] = counts.get(row[index], 0) + 1
        return counts


def run_has_trials(root: Path, run_id: str) -> bool:
    result = run_named(root, "trial_count", {"run_id": run_id})
    return bool(result.rows[0][0])


def compare_runs(root: Path, baseline: str, candidate: str) -> Comparison:
    """k/n per scenario x model x prompt x memory mode in both runs, and the transition."""
    for run_id in (baseline, candidate):
        validate_run_id(run_id)
        if not run_has_trials(root, run_id):
            raise ValueError(f"run {run_id!r} has no trials in the warehouse {root}")
    result = run_named(root, "compare_runs", {"baseline": baseline, "candidate": candidate})
    return Comparison(baseline, candidate, result.columns, result.rows)


def previous_nightly_run(root: Path, candidate: str) -> str | None:
    """The latest run started before ``candidate`` whose id has the nightly prefix."""
    result = run_named(root, "previous_run", {"prefix": NIGHTLY_PREFIX, "candidate": candidate},
                       all_runs=True)
    return str(result.rows[0][0]) if result.rows else None


def report_path(reports: Path, baseline: str, candidate: str) -> Path:
    return reports / f"{validate_run_id(candidate)}-vs-{validate_run_id(baseline)}.csv"


def write_csv_atomic(path: Path, columns: list[str], rows: list[tuple[Any, ...]]) -> Path:
    """Write a CSV so a reader sees the old file or the whole new one, never half."""
    with atomic_text(path, newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(["" if v is None else v for v in row] for row in rows)
    return path


def write_comparison(root: Path, reports: Path, baseline: str, candidate: str) -> Comparison:
    """Compare two runs and write ``<reports>/<candidate>-vs-<baseline>.csv``."""
    comparison = compare_runs(root, baseline, candidate)
    path = write_csv_atomic(report_path(reports, baseline, candidate), comparison.columns,
                            comparison.rows)
    return Comparison(baseline, candidate, comparison.columns, comparison.rows, path)
