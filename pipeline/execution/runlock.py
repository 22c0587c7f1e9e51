"""One driver per run id at a time: a lock file held for as long as the run executes.

``AGENTSWEEP_HOME/locks/<run_id>.lock`` is locked with ``flock`` by the driver that runs the
run (a crashed driver's lock goes with its process); its content says who holds it. A second
start of the same run id, fresh or ``--resume``, is refused and names the holder. The lock is
per machine (the home's file system): drivers on several machines sharing one warehouse on
object storage are not serialised by it.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipeline.runtime.hygiene import agentsweep_home


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
