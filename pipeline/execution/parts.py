"""Workers write their parts: a worker buffers its finished trials' rows and stages them as
part files; the driver commits what it is told was staged (warehouse.staged).

Only an attempt that is final whatever the driver decides (not ``is_retryable``: complete, an
agent error, a limit, a refused configuration) is kept by its worker; a retryable failure goes
back to the driver whole, which settles and writes it as before. So a part never holds a row
the driver might retry, and every final row lands in a part together with its ``attempts`` row.

A trial is final once a commit names its part. Until then the driver keeps its flight: if the
worker dies with the trial unstaged, or staged and not yet reported, it runs again (the staged
part stays invisible, garbage for ``warehouse check``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.execution.attempts import Attempt
from pipeline.execution.outcome import Outcome
from pipeline.trial.run import TrialResult
from warehouse.diskspace import DiskFull
from warehouse.location import Root, S3Location, adopt_store_settings, store_settings
from warehouse.staged import StagedBatch, stage_batch
from warehouse.store_retry import ObjectStoreUnavailable
from warehouse.writer import WarehouseError

WRITE_FAILURES = (DiskFull, ObjectStoreUnavailable, WarehouseError)
"""Failures of a worker's write that stop the sweep (the driver raises them as they are)."""


@dataclass(frozen=True)
class PartsConfig:
    """Where and how often a worker writes the parts of one run."""

    root: Root
    run_id: str
    batch_size: int
    """Trials per part (each worker's own)."""
    flush_interval_s: float
    """Longest a finished trial waits in a worker's buffer before its part is written."""
    node_id: str | None = None
    """A folder is written only by workers on this node (the driver's: a worker elsewhere has
    another disk and sends its rows back); None: any worker (object storage)."""
    store_env: dict[str, str] = field(default_factory=dict)
    """The object store's endpoint and region as the driver has them (never credentials), for
    workers whose environment names none."""

    @classmethod
    def for_root(cls, root: Root, run_id: str, batch_size: int, flush_interval_s: float,
                 driver_node: str | None) -> PartsConfig:
        if not isinstance(root, S3Location):
            return cls(root, run_id, batch_size, flush_interval_s, driver_node)
        return cls(root, run_id, batch_size, flush_interval_s, None, store_settings())

    def writes_on(self, node_id: str) -> bool:
        """Whether a worker on ``node_id`` writes its parts: a folder on the driver's node
        only; object storage where this process's environment names credentials (a worker of
        a stack started without them sends its rows back: an unsigned write is refused by a
        real store, and stored as garbage by some)."""
        if not isinstance(self.root, S3Location):
            return self.node_id is None or self.node_id == node_id
        return store_credentials_named()


CREDENTIAL_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_PROFILE",
                        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
"""Variables by which the AWS SDKs find credentials (keys, IRSA's token, a profile, a container
endpoint); with none set and no credentials file, only the instance metadata service is left,
which is never asked from here."""


def store_credentials_named() -> bool:
    """Whether this process's environment names object-storage credentials, without asking any
    address for them (read from the environment and the credentials file's presence only)."""
    if any(os.environ.get(name) for name in CREDENTIAL_VARIABLES):
        return True
    shared = os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or "~/.aws/credentials"
    path = Path(shared).expanduser()
    return path.is_file() and path.stat().st_size > 0


@dataclass(frozen=True)
class WrittenPart:
    """A staged batch and the attempts it holds: what the driver commits and counts."""

    batch: StagedBatch
    outcomes: tuple[Outcome, ...]


@dataclass(frozen=True)
class Flushed:
    """Parts a worker staged since it last reported, and a write failure if one happened."""

    parts: tuple[WrittenPart, ...] = ()
    error: Exception | None = None


class PartBuffer:
    """One worker's finished trials of one run, until a part holds them. Trial threads add
    and take concurrently; a part is encoded and written outside the lock."""

    def __init__(self, config: PartsConfig,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.clock = clock
        self._lock = threading.Lock()
        self._rows: dict[str, list[dict[str, Any]]] = {}
        self._outcomes: list[Outcome] = []
        self._since: float | None = None
        self._written: list[WrittenPart] = []
        self._error: Exception | None = None
        adopt_store_settings(config.store_env)

    def add(self, result: TrialResult, number: int) -> Outcome:
        """Keep a final attempt's rows (its ``attempts`` row too); its outcome."""
        outcome = Outcome.of(result, number)
        tables = result.tables()
        tables["attempts"] = [Attempt(result, number, final=True).row().as_dict()]
        with self._lock:
            for table, rows in tables.items():
                if rows:
                    self._rows.setdefault(table, []).extend(rows)
            self._outcomes.append(outcome)
            if self._since is None:
                self._since = self.clock()
        return outcome

    def due(self) -> bool:
        """Whether ``take`` would write a part now."""
        with self._lock:
            return self._due(force=False)

    def _due(self, force: bool) -> bool:
        return bool(self._outcomes) and (
            force or len(self._outcomes) >= self.config.batch_size
            or (self._since is not None
                and self.clock() - self._since >= self.config.flush_interval_s))

    def take(self, force: bool = False) -> Flushed:
        """Write a part if one is due (``force``: whatever is buffered); the parts written and
        not yet reported, and the first write failure, each reported once."""
        with self._lock:
            due = self._due(force)
            rows, outcomes = (self._rows, self._outcomes) if due else ({}, [])
            if due:
                self._rows, self._outcomes, self._since = {}, [], None
        if outcomes:
            self._write(rows, outcomes)
        with self._lock:
            flushed = Flushed(tuple(self._written), self._error)
            self._written, self._error = [], None
        return flushed

    def _write(self, rows: dict[str, list[dict[str, Any]]], outcomes: list[Outcome]) -> None:
        try:
            batch = stage_batch(self.config.root, self.config.run_id, rows)
        except WRITE_FAILURES as exc:  # its trials are never committed: the sweep stops
            with self._lock:
                self._error = self._error or exc
            return
        if batch is not None:
            with self._lock:
                self._written.append(WrittenPart(batch, tuple(outcomes)))
