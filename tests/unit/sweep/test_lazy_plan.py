"""A sweep's plan streams its grid: nothing is expanded when planning, the first pending spec
comes after walking only the trials before it, and a resume skips exactly the done trials, in the
grid's order, as a full expansion filtered by a set of ids would."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE

from pipeline.execution.attempts import attempt_counts
from pipeline.sweep import grid
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.done import DoneTrials, done_trials
from pipeline.sweep.grid import ModelConfig, TrialSpec, expand, trial_id_for
from pipeline.sweep.pending import PendingSpecs, expected_count
from pipeline.sweep.stages import load_plan_suites, plan
from pipeline.trial.spec import trial_ids_by_repeat
from warehouse.schema import TABLES
from warehouse.writer import WarehouseWriter

RUN = "lazy"


def _config(root: Path, repeats: int, resume: bool = True) -> SweepConfig:
    return SweepConfig(suites=[MEETING_SUITE], memory_modes=["chat", "structured"],
                       repeats=repeats, run_id=RUN, resume=resume, warehouse=root,
                       trial_timeout_s=42.0)


def _full_grid(config: SweepConfig) -> list[TrialSpec]:
    return list(expand(load_plan_suites(config), config.resolved_models(), config.prompts,
                       config.memory_modes, config.repeats))


def _row(table: str, trial_id: str, status: str, attempt: int = 1) -> dict[str, Any]:
    """A row of ``table`` with the columns a resume reads; the rest plain values."""
    now = datetime.now(UTC)
    row: dict[str, Any] = {}
    for f in TABLES[table].arrow_schema():
        kind = str(f.type)
        row[f.name] = (None if f.nullable else now if kind.startswith("timestamp")
                       else 0 if "int" in kind else 0.0 if kind == "double"
                       else False if kind == "bool" else "")
    row.update(run_id=RUN, trial_id=trial_id, attempt_id=f"{trial_id}-{attempt}")
    row.update({"status": status} if table == "trials" else
               {"attempt": attempt, "outcome": status})
    row.pop("schema_version")
    return row


def _write(root: Path, finals: list[str], incomplete: list[str]) -> None:
    """Final and incomplete trial rows (with their attempts) in a few parts, as a night
    leaves them."""
    writer = WarehouseWriter(root, RUN)
    rows = [(t, "complete") for t in finals] + [(t, "incomplete") for t in incomplete]
    for start in range(0, len(rows), 3):
        batch = rows[start:start + 3]
        writer.write_batch({"attempts": [_row("attempts", t, s) for t, s in batch],
                            "trials": [_row("trials", t, s) for t, s in batch]})


def test_planning_expands_nothing_and_the_first_spec_costs_one_trial_id(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    real = grid.trial_ids_by_repeat

    def counted(*args: Any, **kwargs: Any) -> Any:
        of = real(*args, **kwargs)
        assert of is not None  # reference/golden has no seed: the ids by repeat

        def counted_of(repeat: int) -> str:
            if len(made) > 1000:  # fail fast: an eager plan would walk millions
                raise AssertionError("planning walks the grid")
            made.append(of(repeat))
            return made[-1]
        return counted_of

    monkeypatch.setattr(grid, "trial_ids_by_repeat", counted)
    config = _config(tmp_path / "wh", repeats=500_000, resume=False)  # a grid of millions
    sweep_plan = plan(config)
    assert made == [] and sweep_plan.grid_size > 1_000_000
    assert expected_count(sweep_plan.pending) == sweep_plan.grid_size
    first = next(iter(sweep_plan.pending))
    assert len(made) == 1 and first.trial_id == made[0] and first.deadline_s == 42.0
    assert bool(sweep_plan.pending) and len(made) == 2


def test_a_resume_skips_exactly_the_done_trials_in_the_grids_order(tmp_path: Path) -> None:
    root = tmp_path / "wh"
    config = _config(root, repeats=3)
    everything = _full_grid(config)
    ids = [s.trial_id for s in everything]
    finals = ids[:5] + ids[9::4]
    _write(root, finals + ["not-a-hex-id"], incomplete=[ids[6], ids[7], ids[9]])  # 9: resumed
    sweep_plan = plan(config)
    done = set(finals)  # what planning did before: a set of ids, every spec expanded
    assert [s.trial_id for s in sweep_plan.pending] == [t for t in ids if t not in done]
    assert [s.repeat for s in sweep_plan.pending] == [s.repeat for s in everything
                                                      if s.trial_id not in done]
    assert sweep_plan.skipped == len(finals) and len(sweep_plan.pending) == len(ids) - len(done)
    assert all(s.deadline_s == 42.0 for s in sweep_plan.pending)
    assert [s.trial_id for s in sweep_plan.pending[2:4]] == [t for t in ids
                                                               if t not in done][2:4]


def test_a_resume_whose_done_trials_come_first_walks_them_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "wh"
    config = _config(root, repeats=3)
    ids = [s.trial_id for s in _full_grid(config)]
    _write(root, ids[:10], incomplete=[])
    sweep_plan = plan(config)
    looked_up: list[str] = []
    real = DoneTrials.__contains__
    monkeypatch.setattr(DoneTrials, "__contains__",
                        lambda self, t: looked_up.append(t) or real(self, t))
    assert sweep_plan.pending  # prepare asks this first: the walk stops at trial 11
    assert len(looked_up) == 11
    assert next(iter(sweep_plan.pending)).trial_id == ids[10]  # the same walk goes on
    assert len(looked_up) == 11


def test_a_finished_run_has_nothing_pending(tmp_path: Path) -> None:
    root = tmp_path / "wh"
    config = _config(root, repeats=1)
    ids = [s.trial_id for s in _full_grid(config)]
    _write(root, ids, incomplete=[])
    sweep_plan = plan(config)
    assert not sweep_plan.pending and list(sweep_plan.pending) == []
    assert sweep_plan.skipped == sweep_plan.grid_size == len(ids)


def test_the_done_set_holds_sixteen_bytes_a_trial_and_tells_ids_apart(tmp_path: Path) -> None:
    root = tmp_path / "wh"
    same_high = ["0123456789abcdef" + f"{n:016x}" for n in (5, 1, 9)]
    others = [f"{n:032x}" for n in (2**64, 7, 2**127)]
    _write(root, same_high + others + ["odd-id"], incomplete=["f" * 32])
    done = done_trials(root, RUN)
    assert len(done) == 7 and done.nbytes == 16 * 6
    assert all(t in done for t in [*same_high, *others, "odd-id"])
    absent = ["0123456789abcdef" + f"{n:016x}" for n in (0, 2, 10)] + ["f" * 32, "x" * 32,
                                                                        "0" * 31, "ODD-ID"]
    assert not any(t in done for t in absent)
    assert list(itertools.compress(same_high, [t in DoneTrials.of(same_high)
                                               for t in same_high])) == same_high


def test_a_resume_numbers_attempts_of_open_trials_only(tmp_path: Path) -> None:
    root = tmp_path / "wh"
    _write(root, ["a" * 32], incomplete=["b" * 32])
    assert attempt_counts(root, RUN) == {"a" * 32: 1, "b" * 32: 1}
    assert attempt_counts(root, RUN, open_only=True) == {"b" * 32: 1}


def test_pending_specs_index_count_and_slice_as_a_list_would() -> None:
    walks: list[int] = []

    def walk() -> Iterator[Any]:
        walks.append(1)
        return iter(range(10))

    pending = PendingSpecs(walk, 10)  # type: ignore[arg-type]
    as_list = list(range(10))
    assert pending[3] == 3 and pending[-1] == 9 and pending[2:8:3] == as_list[2:8:3]
    assert pending[::2] == as_list[::2] and pending[-3:] == as_list[-3:]
    with pytest.raises(IndexError):
        pending[10]
    walks.clear()
    assert list(pending) == as_list and len(pending) == 10 and len(walks) == 1


@pytest.mark.parametrize("cell", [
    {}, {"tools": "mock"}, {"agent": "my_agent.py:make"},
    {"user_model": ModelConfig("reference/user")},
    {"user_model": ModelConfig("reference/user", temperature=0.3), "user_max_turns": 3},
])
def test_ids_by_repeat_are_the_trial_ids(cell: dict[str, Any]) -> None:
    scenario = load_plan_suites(_config(Path("unused"), 1))[0].scenarios[0].scenario
    model = ModelConfig("openai/gpt-4o-mini", temperature=0.7, params={"top_p": 0.9})
    of = trial_ids_by_repeat(scenario, "sha", model, "prompt-sha", "chat", **cell)
    assert of is not None
    for repeat in (0, 1, 7, 12345):
        assert of(repeat) == trial_id_for(scenario, "sha", model, "prompt-sha", "chat", repeat,
                                          **cell)


def test_a_seeded_model_gets_its_ids_one_by_one() -> None:
    scenario = load_plan_suites(_config(Path("unused"), 1))[0].scenarios[0].scenario
    seeded = ModelConfig("openai/gpt-4o-mini", seed=40)
    assert trial_ids_by_repeat(scenario, "sha", seeded, "p", "chat") is None
    assert trial_ids_by_repeat(scenario, "sha", ModelConfig("a/b"), "p", "chat",
                               user_model=seeded) is None
    specs = list(expand(load_plan_suites(_config(Path("unused"), 1)), [seeded], ["default"],
                        ["chat"], 3))
    assert [s.trial_id for s in specs[:3]] == [
        trial_id_for(specs[0].scenario, specs[0].scenario_sha256, seeded.for_repeat(r),
                     specs[0].prompt.sha256, "chat", r) for r in range(3)]
