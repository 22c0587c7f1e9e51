"""A run split into shards (``--shard I/N``): each driver's plan is its slice of one grid, the
slices cover the grid once, a shard skips what is final already, and the options are checked
before anything runs (naming ``--shard`` and its value)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import MEETING_SUITE
from helpers.gate_fixtures import trial

from pipeline.cli.run import RunOptions, build_config, grid_line
from pipeline.execution.shards import Shard
from pipeline.sweep.config import SweepConfig, config_json
from pipeline.sweep.preflight import BadInput, refuse_existing
from pipeline.sweep.stages import new_invocation_id, plan, record_run
from warehouse.writer import WarehouseWriter


def _config(warehouse: Path, shard: str | None = None, **more: object) -> SweepConfig:
    args: dict[str, object] = {"suites": [MEETING_SUITE], "memory_modes": ["chat"],
                               "repeats": 4, "run_id": "sharded", "warehouse": warehouse,
                               "shard": shard, **more}
    return SweepConfig.model_validate(args)


def test_the_shards_plans_split_one_grid_once(tmp_path: Path) -> None:
    whole = plan(_config(tmp_path))
    grid = {s.trial_id for s in whole.pending}
    slices = [plan(_config(tmp_path, f"{i}/3")) for i in (1, 2, 3)]
    assert all(p.grid_size == whole.grid_size == len(grid) for p in slices)
    ids = [s.trial_id for p in slices for s in p.pending]
    assert len(ids) == len(set(ids)) == len(grid) and set(ids) == grid
    assert all(p.elsewhere == len(grid) - len(p.pending) and p.skipped == 0 for p in slices)
    assert all(0 < len(p.pending) < len(grid) for p in slices)


def test_a_shard_joining_a_run_skips_the_trials_already_final(tmp_path: Path) -> None:
    config = _config(tmp_path, "1/2")
    mine = plan(config).pending
    done = mine[0]
    row = {**trial(config.run_id, done.scenario.id, 0, True), "trial_id": done.trial_id}
    WarehouseWriter(tmp_path, config.run_id).write_batch({"trials": [row]})
    again = plan(config)  # not --resume: a shard never runs a final trial twice
    assert [s.trial_id for s in again.pending] == [s.trial_id for s in mine[1:]]
    assert again.skipped == 1


def test_a_shard_is_not_recorded_as_part_of_the_runs_grid(tmp_path: Path) -> None:
    """A plain ``--resume --run-id R`` reads R's recorded grid: it must not become a shard."""
    assert "shard" not in json.loads(config_json(_config(tmp_path, "2/2")))


@pytest.mark.parametrize(("options", "said"), [
    (RunOptions(shard="3/2", run_id="r"), "--shard '3/2': shard 3 of 2 does not exist"),
    (RunOptions(shard="two", run_id="r"), "--shard 'two': give the shard as I/N"),
    (RunOptions(shard="1/0", run_id="r"), "--shard '1/0': the number of shards N must be"),
    (RunOptions(shard="1/2"), "--shard 1/2: the drivers of a run's shards share its run id"),
])
def test_a_bad_shard_option_is_refused_naming_it(options: RunOptions, said: str) -> None:
    with pytest.raises(BadInput) as refused:
        build_config(options)
    assert str(refused.value).startswith(said)


def test_a_shard_joins_an_existing_run_only_on_its_grid(tmp_path: Path) -> None:
    first = _config(tmp_path, "1/2")
    refuse_existing(first, append=False)  # a new run: free
    record_run(first, plan(first), datetime.now(UTC), None, new_invocation_id())
    refuse_existing(_config(tmp_path, "2/2"), append=False)  # the same grid: joins it
    with pytest.raises(BadInput, match=r"--run-id sharded: this run already exists"):
        refuse_existing(_config(tmp_path), append=False)  # unsharded and not --resume
    with pytest.raises(BadInput, match=r"--shard 2/2: run sharded was started on another grid "
                       r"\(repeats differ\)"):
        refuse_existing(_config(tmp_path, "2/2", repeats=5), append=False)
    with pytest.raises(BadInput, match="--shard 2/2: a shard runs a slice"):
        refuse_existing(_config(tmp_path, "2/2"), append=True)


def test_the_grid_line_of_a_shard_says_what_is_elsewhere() -> None:
    assert grid_line(60, 30, 0) == "grid 60 trials: executed 30, skipped 0 (already final)"
    assert grid_line(60, 28, 2, Shard(index=1, count=2), 30).endswith(
        "skipped 2 (already final); shard 1/2: 30 trials in the other shards' slices")


def test_a_bad_shard_beside_a_spec_is_refused_naming_it(tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(f'suites: ["{MEETING_SUITE}"]\nmodels: [reference/golden]\n', "utf-8")
    with pytest.raises(BadInput, match=r"^--shard '5/2': shard 5 of 2 does not exist"):
        build_config(RunOptions(spec=spec, run_id="r", shard="5/2"))
    with pytest.raises(BadInput, match=r"^--shard 1/2: .* give --run-id too"):
        build_config(RunOptions(spec=spec, shard="1/2"))
    assert build_config(RunOptions(spec=spec, run_id="r", shard="2/2")).shard == Shard(
        index=2, count=2)
