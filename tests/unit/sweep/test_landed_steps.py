"""A running sweep compacts what has landed as Ray tasks beside its driver
(pipeline.sweep.landed_steps): one step when due, never two at once, never waited for until
the trials are done, a failed one said and the next tried; on object storage with the
credentials of the step's node, and none submitted once a node had none."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from unit.warehouse.test_compact import RUN, _batch

from pipeline.execution.parts import CREDENTIAL_VARIABLES
from pipeline.sweep.landed_steps import LandedSteps
from warehouse.location import S3Location, parse_location
from warehouse.objectstore import live_records
from warehouse.query import run_sql
from warehouse.writer import WarehouseWriter


class RayError(Exception):
    pass


class FakeRay:
    """Runs a submitted task when its ref is first looked at and found done."""

    class exceptions:  # noqa: N801 (ray.exceptions)
        RayError = RayError

    def __init__(self) -> None:
        self.submitted: list[tuple[dict[str, Any], tuple[Any, ...]]] = []
        self.finished = False
        self.fail = False
        self.waits: list[float] = []

    def remote(self, fn: Callable[..., Any]) -> Any:
        ray = self

        class Task:
            def options(self, **options: Any) -> Any:
                class Bound:
                    def remote(self, *args: Any) -> Any:
                        ray.submitted.append((options, args))
                        return (fn, args)
                return Bound()
        return Task()

    def wait(self, refs: list[Any], timeout: float) -> tuple[list[Any], list[Any]]:
        self.waits.append(timeout)
        return (refs, []) if self.finished else ([], refs)

    def get(self, ref: Any) -> Any:
        if self.fail:
            raise RayError("the worker died\nCompactionError: disk full")
        fn, args = ref
        return fn(*args)


def test_a_step_is_submitted_when_due_runs_beside_and_compacts(tmp_path: Path) -> None:
    root = tmp_path / "wh"
    writer = WarehouseWriter(root, RUN)
    for b in range(3):
        writer.write_batch(_batch(4 * b, 4))
    now = [0.0]
    ray, said = FakeRay(), list[str]()
    node = "ab" * 28
    steps = LandedSteps(ray, root, RUN, node, every_s=60, say=said.append,
                        clock=lambda: now[0])
    steps.tick()
    assert ray.submitted == []
    now[0] = 61
    steps.tick()
    steps.tick()  # in flight: not a second one, not waited for
    assert len(ray.submitted) == 1
    options, args = ray.submitted[0]
    assert options["num_cpus"] == 0 and args == (str(root), RUN, {})
    assert options["scheduling_strategy"].node_id == node  # the folder's node
    ray.finished = True
    steps.tick()  # the step ends (here it runs): the next is not due yet
    assert len(ray.submitted) == 1 and said == []
    assert len(list((root / "trials" / f"run_id={RUN}").glob("*.parquet"))) == 1
    assert run_sql(root, "SELECT count(*) FROM trials_all").rows == [(12,)]
    now[0] = 125
    ray.fail = True
    steps.tick()  # the second step is submitted
    steps.tick()  # and fails: said, the run as it was
    assert len(ray.submitted) == 2 and len(said) == 1 and "disk full" in said[0]
    now[0] = 185
    steps.tick()  # the next is tried at its time
    assert len(ray.submitted) == 3
    assert set(ray.waits) == {0}  # while trials run, the driver never waits for a step


def _no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))


def test_on_object_storage_a_node_without_credentials_ends_the_steps_said_once(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _no_credentials(monkeypatch, tmp_path)
    ray, said, now = FakeRay(), list[str](), [0.0]
    steps = LandedSteps(ray, parse_location("s3://bucket/wh"), RUN, "ab" * 28, every_s=60,
                        say=said.append, clock=lambda: now[0])
    now[0] = 61
    steps.tick()
    options, args = ray.submitted[0]
    assert "scheduling_strategy" not in options  # any node reaches the bucket
    assert args[:2] == ("s3://bucket/wh", RUN) and set(args[2]) <= {"AWS_ENDPOINT_URL",
                                                                    "AWS_REGION"}
    ray.finished = True
    steps.tick()  # the step finds no credentials on its node: said, and no more
    now[0] = 1000
    steps.tick()
    assert len(ray.submitted) == 1 and len(said) == 1
    assert "no object-storage credentials" in said[0] and "compact --landed" in said[0]


@pytest.mark.slow  # an S3 server on loopback
def test_on_object_storage_a_step_with_credentials_compacts_and_drain_waits_for_it(
        s3_warehouse: S3Location) -> None:
    writer = WarehouseWriter(s3_warehouse, RUN)
    for b in range(3):
        writer.write_batch(_batch(4 * b, 4))
    before = live_records(s3_warehouse, [RUN])
    ray, now = FakeRay(), [0.0]
    steps = LandedSteps(ray, s3_warehouse, RUN, None, every_s=60, clock=lambda: now[0])
    now[0] = 61
    steps.tick()
    assert len(ray.submitted) == 1
    ray.finished = True
    steps.drain()  # the trials are done: the step in flight is waited for (here: it runs)
    assert steps.running is None
    assert len(live_records(s3_warehouse, [RUN])) == 1 < len(before)
    assert run_sql(s3_warehouse, "SELECT count(*) FROM trials_all").rows == [(12,)]
