"""Which runs' rows are all their trials' chosen attempts, so the views need not pick them.

A trial can have several attempts (an incomplete one, then a resumed one); the views keep one:
``trials`` the chosen attempt of each (run, trial), and ``events``, ``checks``,
``condition_trials``, ``snapshots`` and ``diagnostics`` only that attempt's rows
(``warehouse/sql/views.sql``). The pick is a window over every trial row and a semi join of
every event row, paid by every query (docs/performance.md). Most runs have one attempt per
trial and no stray row, and compaction can tell, since it reads every row of the run anyway
(``warehouse.compact``). It names what it writes:

- ``compact-<stamp>-<uuid>-<n>-chosen.parquet``: every row is a row of its trial's chosen
  attempt. For ``trials``: the run has one row per trial id. For the other tables of
  ``ATTEMPT_TABLES``: the run's trials are marked chosen and every row's (trial_id,
  attempt_id) is one of them;
- ``compact-<stamp>-<uuid>-<n>-all.parquet``: no such claim (the pick stays).

A run's files of a table are read as they are (the view ``<table>_chosen``) when every one of
them, and every one of the run's ``trials`` files, is marked chosen; the other runs' files
(``<table>_rest``) are picked. Why the mark stays true: a run's rows are never removed or
changed (compaction rewrites them all), so a row of the chosen attempt stays one while no
other trials row of its trial is added, and any file added later (a resume) has no mark, which
sends the run back to the pick until it is compacted again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

ATTEMPT_TABLES = ("trials", "events", "checks", "condition_trials", "snapshots", "diagnostics")
"""The tables whose views keep only rows of each trial's chosen attempt (views.sql)."""
COMPACTED_PREFIX = "compact-"

Mark = Literal["chosen", "all"]


def compacted_name(stem: str, index: int, mark: Mark) -> str:
    """The name of compaction's ``index``-th file of one table of one run."""
    return f"{stem}-{index:04d}-{mark}.parquet"


def is_compacted(name: str) -> bool:
    """A file compaction wrote (marked or, before marks, not)."""
    return name.rsplit("/", 1)[-1].startswith(COMPACTED_PREFIX)


def mark_of(name: str) -> Mark | None:
    """The mark of a compacted file's name (a path or key may be given); None for a part file
    or a file compacted before marks existed."""
    base = name.rsplit("/", 1)[-1]
    if not base.startswith(COMPACTED_PREFIX):
        return None
    if base.endswith("-chosen.parquet"):
        return "chosen"
    if base.endswith("-all.parquet"):
        return "all"
    return None


def all_chosen(names: Sequence[str]) -> bool:
    """Whether there are files and every one is marked chosen."""
    return bool(names) and all(mark_of(n) == "chosen" for n in names)


@dataclass(frozen=True)
class TableFiles:
    """What one table's raw views read: files (or glob patterns) of runs read as they are, and
    of runs whose rows the views pick."""

    chosen: tuple[str, ...] = ()
    rest: tuple[str, ...] = ()

    @property
    def every(self) -> tuple[str, ...]:
        return self.chosen + self.rest


def split_runs(files: Mapping[str, Mapping[str, Sequence[str]]],
               rest_paths: Callable[[str, str, Sequence[str]], Sequence[str]] | None = None
               ) -> dict[str, TableFiles]:
    """Every table's files by run (``files[table][run]``: the run's file paths of that table)
    split into the runs read as they are and the others. ``rest_paths(table, run, files)``:
    what to read for a run that is picked (a glob of its folder, say); default its files."""
    trials = files.get("trials", {})
    found: dict[str, TableFiles] = {}
    for table, by_run in files.items():
        chosen: list[str] = []
        rest: list[str] = []
        for run, paths in sorted(by_run.items()):
            if not paths:
                continue
            if (table in ATTEMPT_TABLES and all_chosen(paths)
                    and all_chosen(trials.get(run, ()))):
                chosen.extend(paths)
            else:
                rest.extend(paths if rest_paths is None else rest_paths(table, run, paths))
        found[table] = TableFiles(tuple(chosen), tuple(rest))
    return found
