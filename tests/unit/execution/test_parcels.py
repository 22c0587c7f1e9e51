"""A run's shared trial parts go to each worker once; every trial call carries a compact spec.

The driver once pickled each whole TrialSpec (scenario, prompt, ...) into its own actor call:
most of its CPU. These tests fail if that comes back.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import ray.cloudpickle as cloudpickle
from conftest import MEETING_SUITE

from pipeline.execution.executor import ExecuteOptions, WorkerPool, execute
from pipeline.execution.parcels import (
    GateConfig,
    Holder,
    MissingParts,
    Packer,
    Parcel,
    Plan,
    SharedParts,
)
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.grid import TrialSpec
from pipeline.sweep.stages import plan
from pipeline.trial.run import RunContext, TrialResult

CTX = RunContext(run_id="parcels", code_version="test")


def _specs(root: Path, repeats: int = 5) -> list[TrialSpec]:
    config = SweepConfig(suites=[MEETING_SUITE], memory_modes=["chat"], repeats=repeats,
                         run_id="parcels", warehouse=root)
    return [replace(s, deadline_s=30.0, extra={"note": s.trial_id[:4]})
            for s in plan(config).pending]


def _packer() -> Packer:
    return Packer(Plan(CTX, GateConfig(limiters={}, faults={})))


def test_a_worker_rebuilds_each_spec_whole(tmp_path: Path) -> None:
    packer, holder = _packer(), Holder()
    for spec in _specs(tmp_path):
        compact = packer.pack(spec)
        parcel = packer.parcel(0, 0, compact)
        rebuilt, got = holder.unpack(packer.plan_id, cloudpickle.loads(cloudpickle.dumps(
            compact)), cloudpickle.loads(cloudpickle.dumps(parcel)))
        if parcel is not None:
            packer.confirm(0, 0, parcel)
        assert rebuilt == spec
        assert (rebuilt.extra, rebuilt.domain_path, rebuilt.deadline_s) == (
            spec.extra, spec.domain_path, spec.deadline_s)  # fields left out of ==
        assert got.ctx == CTX


def test_shared_parts_go_once_per_worker_and_calls_stay_small(tmp_path: Path) -> None:
    specs = _specs(tmp_path)
    packer = _packer()
    whole = len(cloudpickle.dumps(specs[0]))
    carried: list[int] = []
    for spec in specs:
        compact = packer.pack(spec)
        parcel = packer.parcel(0, 0, compact)
        if parcel is not None:
            carried.append(len(parcel.parts))
            packer.confirm(0, 0, parcel)
        assert len(cloudpickle.dumps(compact)) < whole / 4
        assert spec.scenario.id.encode() not in cloudpickle.dumps(compact)
    scenarios = len({s.scenario.id for s in specs})
    assert sum(carried) == scenarios < len(specs)  # each scenario's parts sent once
    # a replaced worker (new generation) or one whose call failed holds nothing
    assert packer.parcel(0, 1, packer.pack(specs[0])) is not None
    packer.forget(0, 0)
    assert packer.parcel(0, 0, packer.pack(specs[0])) is not None


def test_a_worker_without_the_parts_refuses_loudly(tmp_path: Path) -> None:
    packer, holder = _packer(), Holder()
    compact = packer.pack(_specs(tmp_path, repeats=1)[0])
    with pytest.raises(MissingParts):
        holder.unpack(packer.plan_id, compact, None)
    with pytest.raises(MissingParts):  # the plan without the parts
        holder.unpack(packer.plan_id, compact, Parcel(packer.plan))


def test_actor_calls_carry_shared_parts_only_until_the_worker_holds_them(
        ray_local: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, int]] = []  # (shared parts carried, pickled bytes) per attempt
    original = WorkerPool.start

    def counting(pool: WorkerPool, slot: int, plan_id: str, items: list[Any]) -> Any:
        for compact, key, parcel in items:
            parts = 0 if parcel is None else sum(
                isinstance(p, SharedParts) for p in parcel.parts.values())
            calls.append((parts, len(cloudpickle.dumps((plan_id, compact, key)))))
        return original(pool, slot, plan_id, items)

    monkeypatch.setattr(WorkerPool, "start", counting)
    specs = _specs(tmp_path, repeats=4)
    results: list[TrialResult] = []
    max_in_flight = 2
    execute(specs, CTX, results.append, max_in_flight, options=ExecuteOptions(workers=1))
    assert sorted(r.trial.trial_id for r in results) == sorted(s.trial_id for s in specs)
    assert {r.status for r in results} == {"complete"}
    scenarios = len({s.scenario.id for s in specs})
    assert len(calls) == len(specs)
    # before a worker confirms a part, the calls in flight may carry it too; never more
    assert sum(parts for parts, _ in calls) <= scenarios * max_in_flight < len(specs)
    whole = len(cloudpickle.dumps(specs[0]))
    assert max(size for _, size in calls) < whole / 4
