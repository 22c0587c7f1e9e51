"""Compaction of finished runs, each under its run lock (``agentsweep warehouse compact``), and
of what has landed in a running run.

The rewrite and the swap are ``warehouse.compact``; this adds the rule that a run is never
compacted while a driver runs it: the run's lock (``pipeline.execution.runlock``) is taken for
the time of its compaction, and a run whose lock is held is refused, not waited for. The end of
a sweep compacts its run inside the lock it already holds (``flows.sweep``), in a Ray task
(``pipeline.sweep.end_compaction``).

A step over what has landed (``warehouse.compact_landed``) takes no run lock. On a folder its
lock file serialises it with other steps and with the run's compaction; on object storage the
lease ``<run>.landed`` (``pipeline.execution.lease``) does, which the run's compaction takes
too (``landed_excluded``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pipeline.execution.lease import LeaseHeld, run_lease
from pipeline.execution.runlock import RunLocked, run_guard
from warehouse.compact import TableCompaction, compact_run, run_folders
from warehouse.compact_landed import compact_landed, compact_landed_objects
from warehouse.location import Root, S3Location

LANDED_LEASE = ".landed"
"""The suffix of the lease (``<run><suffix>``) the steps of a running run take on object
storage."""


@contextmanager
def landed_excluded(root: Root, run_id: str) -> Iterator[None]:
    """No step over what has landed runs during the block: on object storage the run's
    ``.landed`` lease held (``LeaseHeld`` when a step holds it); on a folder nothing here
    (compaction takes the steps' lock file itself)."""
    if not isinstance(root, S3Location):
        yield
        return
    with run_lease(root, f"{run_id}{LANDED_LEASE}"):
        yield


def compact_landed_run(root: Root, run_id: str) -> list[TableCompaction]:
    """One step over what has landed in a run that may be running."""
    if isinstance(root, S3Location):
        with landed_excluded(root, run_id):
            return compact_landed_objects(root, run_id)
    return compact_landed(root, run_id)


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
            with run_guard(run_id, root, home), landed_excluded(root, run_id):
                done.append(RunCompaction(run_id, compact_run(root, run_id)))
        except (RunLocked, LeaseHeld) as exc:
            done.append(RunCompaction(run_id, [], str(exc)))
    return done
