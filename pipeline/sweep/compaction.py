"""Compaction of finished runs, each under its run lock (``agentsweep warehouse compact``).

The rewrite and the swap are ``warehouse.compact``; this adds the rule that a run is never
compacted while a driver runs it: the run's lock (``pipeline.execution.runlock``) is taken for
the time of its compaction, and a run whose lock is held is refused, not waited for. The end of
a sweep compacts its run inside the lock it already holds (``flows.sweep``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.execution.runlock import RunLocked, run_guard
from warehouse.compact import TableCompaction, compact_run, run_folders
from warehouse.location import Root


@dataclass(frozen=True)
class RunCompaction:
    run_id: str
    tables: list[TableCompaction]
    refused: str | None = None
    """Why the run was left as it was (its lock is held), or None."""


def compact_runs(root: Root, run_ids: Sequence[str] | None = None,
                 home: Path | None = None) -> list[RunCompaction]:
    """The named runs (every run of the warehouse when None) compacted, one lock at a time."""
    done = []
    for run_id in run_folders(root) if run_ids is None else run_ids:
        try:
            with run_guard(run_id, root, home):
                done.append(RunCompaction(run_id, compact_run(root, run_id)))
        except RunLocked as exc:
            done.append(RunCompaction(run_id, [], str(exc)))
    return done
