"""A running sweep compacts what has landed as Ray tasks beside its driver
(pipeline.sweep.landed_steps): one step when due, never two at once, never waited for, a failed
one said and the next tried; none on object storage."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from unit.warehouse.test_compact import RUN, _batch

from pipeline.sweep.landed_steps import LandedSteps
from warehouse.location import parse_location
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
        assert timeout == 0  # the driver never waits for a step
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
    assert options["num_cpus"] == 0 and args == (str(root), RUN)
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


def test_no_step_runs_on_object_storage() -> None:
    ray = FakeRay()
    steps = LandedSteps(ray, parse_location("s3://bucket/wh"), RUN, None, every_s=0,
                        clock=lambda: 10.0)
    steps.tick()
    assert ray.submitted == []
