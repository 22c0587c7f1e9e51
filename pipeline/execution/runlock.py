"""One driver per run id at a time: a lock file held for as long as the run executes.

``AGENTSWEEP_HOME/locks/<run_id>.lock`` is locked with ``flock`` by the driver that runs the
run (a crashed driver's lock goes with its process); its content says who holds it. A second
start of the same run id, fresh or ``--resume``, is refused and names the holder. The lock is
per machine (the home's file system): drivers on several machines sharing one warehouse on
object storage are serialised by a lease in the bucket instead (``pipeline.execution.lease``);
``run_guard`` and ``holder_of_run`` pick the one that fits the warehouse.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from pipeline.execution.lease import LeaseHeld, holder_of_lease, run_lease
from pipeline.runtime.hygiene import agentsweep_home
from warehouse.location import Root, S3Location


class RunLocked(RuntimeError):
    """The run id is being run by another driver."""


def locked_message(run_id: str, holder: str) -> str:
    return (f"--run-id {run_id}: this run is already being run by {holder}; wait for it, or "
            "choose another --run-id")


def holder_of(run_id: str, home: Path | None = None) -> str | None:
    """Who else holds the run's lock now (None: nobody, or this process); takes nothing."""
    path = lock_path(run_id, home)
    if not path.is_file():
        return None
    with path.open("r") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = handle.read().strip()
            return None if _is_this_process(holder) else holder or "another process"
    return None


def _is_this_process(holder: str) -> bool:
    try:
        record = json.loads(holder)
    except ValueError:
        return False
    return isinstance(record, dict) and record.get("pid") == os.getpid()


def lock_path(run_id: str, home: Path | None = None) -> Path:
    return (home or agentsweep_home()) / "locks" / f"{run_id}.lock"


@contextmanager
def run_lock(run_id: str, home: Path | None = None) -> Iterator[None]:
    path = lock_path(run_id, home)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = path.open("a+")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise RunLocked(locked_message(run_id, holder)) from None
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))
        handle.flush()
        yield
    finally:
        handle.close()  # closing releases the lock


@contextmanager
def run_guard(run_id: str, warehouse: Root, home: Path | None = None) -> Iterator[None]:
    """The run's lock for the block: the machine's lock file for a warehouse in a folder, the
    bucket's lease for one on object storage (RunLocked either way when another driver runs
    it; an expired lease of a dead driver is taken over, and the takeover logged)."""
    if not isinstance(warehouse, S3Location):
        with run_lock(run_id, home):
            yield
        return
    with ExitStack() as stack:
        try:
            lease = stack.enter_context(run_lease(warehouse, run_id))
        except LeaseHeld as exc:
            raise RunLocked(locked_message(run_id, str(exc))) from None
        yield
        lease.check()  # a run whose lease was taken over mid-way does not end as if whole


def holder_of_run(run_id: str, warehouse: Root, home: Path | None = None) -> str | None:
    """Who else runs the run now, by the lock that fits the warehouse (takes nothing)."""
    if isinstance(warehouse, S3Location):
        return holder_of_lease(warehouse, run_id)
    return holder_of(run_id, home)
