"""Baseline vs candidate: per-cell k/n transitions between two runs, written as a CSV report.

The query is ``warehouse/sql/compare_runs.sql``; its result is a polars DataFrame (one row per
scenario x model x prompt x memory mode), which this module counts, filters and writes to the
report file atomically (``warehouse.atomic``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from warehouse.atomic import atomic_path
from warehouse.frames import frame_named
from warehouse.location import Root
from warehouse.query import run_named
from warehouse.writer import validate_run_id

NIGHTLY_PREFIX = "nightly-"


@dataclass(frozen=True, eq=False)
class Comparison:
    baseline: str
    candidate: str
    frame: pl.DataFrame
    """The rows of ``compare_runs.sql``: the cell, both k/n, ``transition``, ``change``,
    ``review``, the raw counts; regressions first."""
    report: Path | None = None

    def changes(self) -> dict[str, int]:
        """How many cells regressed, improved, stayed the same, ..."""
        counts = self.frame.group_by("change", maintain_order=True).len()
        return {str(change): int(n) for change, n in counts.iter_rows()}

    def regressed_cells(self) -> list[str]:
        """``scenario/model/memory_mode transition`` of each regressed cell."""
        regressed = self.frame.filter(pl.col("change") == "regressed")
        return [f"{r['scenario_id']}/{r['model']}/{r['memory_mode']} {r['transition']}"
                for r in regressed.iter_rows(named=True)]


def run_has_trials(root: Root, run_id: str) -> bool:
    return bool(run_named(root, "trial_count", {"run_id": run_id}).rows[0][0])


def compare_runs(root: Root, baseline: str, candidate: str) -> Comparison:
    """k/n per scenario x model x prompt x memory mode in both runs, and the transition."""
    for run_id in (baseline, candidate):
        validate_run_id(run_id)
        if not run_has_trials(root, run_id):
            raise ValueError(f"run {run_id!r} has no trials in the warehouse {root}")
    frame = frame_named(root, "compare_runs", {"baseline": baseline, "candidate": candidate})
    return Comparison(baseline, candidate, frame)


def previous_nightly_run(root: Root, candidate: str) -> str | None:
    """The latest run started before ``candidate`` whose id has the nightly prefix."""
    result = run_named(root, "previous_run", {"prefix": NIGHTLY_PREFIX, "candidate": candidate},
                       all_runs=True)
    return str(result.rows[0][0]) if result.rows else None


def report_path(reports: Path, baseline: str, candidate: str) -> Path:
    return reports / f"{validate_run_id(candidate)}-vs-{validate_run_id(baseline)}.csv"


def write_csv(path: Path, frame: pl.DataFrame) -> Path:
    """Write a frame as CSV (header, ``\\n`` line ends; null and the empty string both an empty
    field, as a spreadsheet reads them) so that a reader sees the old file or the whole new one,
    never half."""
    plain = frame.with_columns(pl.col(pl.String).replace("", None))
    with atomic_path(path) as tmp:
        plain.write_csv(tmp, line_terminator="\n", null_value="")
    return path


def write_comparison(root: Root, reports: Path, baseline: str, candidate: str) -> Comparison:
    """Compare two runs and write ``<reports>/<candidate>-vs-<baseline>.csv``."""
    comparison = compare_runs(root, baseline, candidate)
    path = write_csv(report_path(reports, baseline, candidate), comparison.frame)
    return Comparison(baseline, candidate, comparison.frame, path)
