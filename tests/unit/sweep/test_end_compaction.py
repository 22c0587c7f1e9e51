"""The end of a run's compaction runs in a Ray task, not in the driver
(pipeline.sweep.end_compaction): pinned to a folder's node, its worker gone after it, waited for;
a failed task leaves the run readable; on object storage a task with no credentials hands the
compaction back; with no Ray the driver compacts."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from unit.warehouse.test_compact import RUN, _batch

from pipeline.execution.parts import CREDENTIAL_VARIABLES
from pipeline.sweep import end_compaction
from pipeline.sweep.end_compaction import NO_CREDENTIALS, EndCompaction, compact_at_end
from warehouse.location import parse_location
from warehouse.query import run_sql
from warehouse.writer import WarehouseWriter

NODE = "ab" * 28


class RayError(Exception):
    pass


class RayTaskError(RayError):
    pass


class FakeRay:
    """Runs a submitted task in a forked child process (as a Ray worker is another process),
    or answers ``answer`` / raises ``raises`` instead."""

    class exceptions:  # noqa: N801 (ray.exceptions)
        RayError = RayError
        RayTaskError = RayTaskError

    def __init__(self, answer: EndCompaction | None = None,
                 raises: Exception | None = None) -> None:
        self.submitted: list[dict[str, Any]] = []
        self.cancelled: list[Any] = []
        self.answer = answer
        self.raises = raises

    def get_runtime_context(self) -> Any:
        class Context:
            def get_node_id(self) -> str:
                return NODE
        return Context()

    def remote(self, **declared: Any) -> Callable[[Callable[..., Any]], Any]:
        ray = self

        def task(fn: Callable[..., Any]) -> Any:
            class Task:
                def options(self, **options: Any) -> Any:
                    class Bound:
                        def remote(self, *args: Any) -> Any:
                            ray.submitted.append({**declared, **options})
                            return fn, args
                    return Bound()
            return Task()
        return task

    def get(self, ref: Any) -> Any:
        if self.raises is not None:
            raise self.raises
        if self.answer is not None:
            return self.answer
        fn, args = ref
        with multiprocessing.get_context("fork").Pool(1) as worker:
            return worker.apply(fn, args)

    def cancel(self, ref: Any, force: bool) -> None:
        self.cancelled.append(ref)


def _landed(root: Path, batches: int = 3) -> None:
    writer = WarehouseWriter(root, RUN)
    for b in range(batches):
        writer.write_batch(_batch(4 * b, 4))


def _files(root: Path) -> int:
    return len(list((root / "trials" / f"run_id={RUN}").glob("*.parquet")))


@pytest.fixture
def on_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """The task's node, as Ray would tell it (the fork inherits the patch)."""
    monkeypatch.setattr(end_compaction, "_node_id", lambda: NODE)


def test_the_compaction_runs_in_a_task_on_the_folders_node(tmp_path: Path,
                                                           on_node: None) -> None:
    root = tmp_path / "wh"
    _landed(root)
    ray = FakeRay()
    ended = compact_at_end(root, RUN, ray)
    assert ended.in_task and ended.failed is None and ended.handed_back is None
    assert ended.pid is not None and ended.pid != os.getpid()  # never the driver's process
    assert ended.node_id == NODE
    [options] = ray.submitted
    assert options["scheduling_strategy"].node_id == NODE and options["num_cpus"] == 0
    assert options["max_calls"] == 1 and options["max_retries"] == 0
    assert _files(root) == 1 and {t.table for t in ended.tables} >= {"trials", "events"}
    assert run_sql(root, "SELECT count(*) FROM trials_all").rows == [(12,)]


def test_with_no_ray_the_driver_compacts(tmp_path: Path) -> None:
    root = tmp_path / "wh"
    _landed(root)
    ended = compact_at_end(root, RUN, None)
    assert not ended.in_task and ended.pid == os.getpid() and ended.node_id is None
    assert _files(root) == 1


def test_a_killed_task_leaves_the_run_readable(tmp_path: Path) -> None:
    root = tmp_path / "wh"
    _landed(root)
    ended = compact_at_end(root, RUN, FakeRay(raises=RayError("The worker died unexpectedly")))
    assert ended.failed is not None and "worker died" in ended.failed and ended.tables == ()
    assert _files(root) == 3
    assert run_sql(root, "SELECT count(*) FROM trials_all").rows == [(12,)]
    with pytest.raises(RayTaskError):  # a bug in the task fails loudly
        compact_at_end(root, RUN, FakeRay(raises=RayTaskError("ZeroDivisionError")))


def test_a_task_with_no_credentials_hands_the_compaction_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_node: None) -> None:
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    # in the task: nothing is read or written, the reason comes back
    back = end_compaction._compact_step("s3://bucket/wh", RUN, {})
    assert back.handed_back == NO_CREDENTIALS and back.in_task and back.tables == ()
    root = tmp_path / "wh"
    _landed(root)
    ended = compact_at_end(root, RUN, FakeRay(answer=back))
    assert ended.handed_back == NO_CREDENTIALS and not ended.in_task
    assert ended.pid == os.getpid() and _files(root) == 1  # the driver ran it


def test_on_object_storage_the_task_is_not_pinned() -> None:
    ray = FakeRay(answer=EndCompaction(RUN, (), 1, NODE, True))
    compact_at_end(parse_location("s3://bucket/wh"), RUN, ray)
    [options] = ray.submitted
    assert "scheduling_strategy" not in options and options["max_calls"] == 1
