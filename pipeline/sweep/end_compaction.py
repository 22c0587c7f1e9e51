"""The compaction at the end of a run as a step of its own: a Ray task the driver submits and
waits for, so that the rewrite's CPU and memory (DuckDB sorting the whole run) are a Ray
worker's, not the driver's.

The task runs where the landed steps run (pipeline.sweep.landed_steps): a folder warehouse is on
the driver's node's disk, so the task is pinned to that node; object storage is reached from
any node. It takes what a run's compaction takes beside the driver's run lock
(``landed_excluded``: no step over what has landed runs meanwhile), compacts
(``warehouse.compact``), and reports what it did and on which process and node. Its worker
process exits after it (``max_calls=1``): the memory of the sort goes with it. A task that
fails, or whose worker is killed, leaves the run readable as compaction's own crash semantics
say, and a later compaction finishes it; the driver says so and goes on.

On object storage the task needs the bucket's credentials. They are never sent to it: a Ray
task's arguments and environment are kept in the cluster's control store and its errors travel
as text. It uses those its own node's environment names (``store_credentials_named``, as a
worker writing parts does), with the endpoint and region the driver uses; on a node with none
it hands the compaction back and the driver runs it, as it does when no Ray is connected (a
resume that found nothing to run starts none).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import duckdb

from pipeline.execution.lease import LeaseHeld
from pipeline.execution.parts import store_credentials_named
from pipeline.sweep.compaction import landed_excluded
from pipeline.sweep.landed_steps import step_options
from warehouse.compact import CompactionError, TableCompaction, compact_run
from warehouse.diskspace import DiskFull
from warehouse.location import (
    Root,
    S3Location,
    adopt_store_settings,
    parse_location,
    store_settings,
)
from warehouse.store_retry import ObjectStoreUnavailable

COMPACTION_FAILURES: tuple[type[Exception], ...] = (
    CompactionError, DiskFull, ObjectStoreUnavailable, duckdb.Error, OSError, LeaseHeld)
"""Failures that leave the run as it was, whole without its compaction (a store away is not
retried here; ``agentsweep warehouse vacuum`` removes what a failed rewrite left)."""
NO_CREDENTIALS = "no object-storage credentials on the compaction's node"


@dataclass(frozen=True)
class EndCompaction:
    """What the end of a run's compaction did, and where it ran."""

    run_id: str
    tables: tuple[TableCompaction, ...] = ()
    pid: int | None = None
    """The process that compacted (None: none did)."""
    node_id: str | None = None
    """The Ray node it ran on (None: the driver, with no Ray connected)."""
    in_task: bool = False
    """It ran in a Ray task, not in the driver."""
    failed: str | None = None
    """Why the run was left as it was (one line), or None."""
    handed_back: str | None = None
    """Why the task gave the compaction back to the driver, which then ran it."""


def compact_at_end(root: Root, run_id: str, ray: Any | None) -> EndCompaction:
    """The run compacted by a Ray task of the connected ``ray`` (None: in this process), whose
    result is waited for. The caller holds the run's lock."""
    if ray is None:
        return compact_here(root, run_id, None)
    driver_node = str(ray.get_runtime_context().get_node_id())
    ended = _in_task(ray, root, run_id, None if isinstance(root, S3Location) else driver_node)
    if ended.handed_back is None:
        return ended
    return replace(compact_here(root, run_id, driver_node), handed_back=ended.handed_back)


def compact_here(root: Root, run_id: str, node_id: str | None) -> EndCompaction:
    """The compaction in this process, its failures reported, not raised."""
    try:
        with landed_excluded(root, run_id):
            tables = compact_run(root, run_id)
    except COMPACTION_FAILURES as exc:
        return EndCompaction(run_id, (), os.getpid(), node_id, failed=_first_line(exc))
    return EndCompaction(run_id, tuple(tables), os.getpid(), node_id)


def _in_task(ray: Any, root: Root, run_id: str, node_id: str | None) -> EndCompaction:
    env = store_settings()
    task = ray.remote(max_calls=1)(_compact_step)  # its worker exits after it
    ref = task.options(**step_options(node_id)).remote(str(root), run_id, env)
    try:
        ended: EndCompaction = ray.get(ref)
    except ray.exceptions.RayTaskError:  # a bug of ours in the task: it fails loudly
        raise
    except ray.exceptions.RayError as exc:  # its worker died (killed, out of memory)
        return EndCompaction(run_id, failed=f"the compaction's task failed: {_first_line(exc)}")
    except BaseException:  # Ctrl-C: the driver lets its run go; the task must not go on
        ray.cancel(ref, force=True)
        raise
    return ended


def _compact_step(root: str, run_id: str, store_env: Mapping[str, str]) -> EndCompaction:
    """The task's body (in a Ray worker): the compaction, or handed back (no credentials)."""
    node_id = _node_id()
    location = parse_location(root)
    if isinstance(location, S3Location):
        if not store_credentials_named():
            return EndCompaction(run_id, (), os.getpid(), node_id, True,
                                 handed_back=NO_CREDENTIALS)
        adopt_store_settings(store_env)  # endpoint and region, never a credential
    return replace(compact_here(location, run_id, node_id), in_task=True)


def _node_id() -> str:
    """The Ray node this worker runs on."""
    import ray

    return str(ray.get_runtime_context().get_node_id())


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
