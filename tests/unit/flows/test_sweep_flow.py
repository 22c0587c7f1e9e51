"""The sweep end to end: a real Prefect flow run, trials as tasks on a real local Ray, real
Parquet, DuckDB over it. One module-scoped sweep is shared by the assertions."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE

from pipeline.catalog import load_suite
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.stages import SweepOutcome
from warehouse.query import run_sql

RUN = "e2e-run"
REPEATS = 2
MODES = ("chat", "summary", "structured")
SCENARIOS = [s.scenario for s in load_suite(MEETING_SUITE).scenarios]
GRID = len(SCENARIOS) * len(MODES) * REPEATS
BOOKING = {s.id for s in SCENARIOS
           if any(getattr(a, "call", None) and a.call.name == "reserve_room"
                  for t in s.turns for a in t.golden)}


@pytest.fixture(scope="module")
def swept(ray_local: Any, prefect_harness: None, tmp_path_factory: pytest.TempPathFactory
          ) -> tuple[Path, SweepOutcome]:
    from flows.sweep import sweep_flow

    root = tmp_path_factory.mktemp("wh") / "warehouse"
    config = SweepConfig(suites=[MEETING_SUITE], repeats=REPEATS, run_id=RUN, warehouse=root,
                         batch_size=GRID // 3)
    return root, sweep_flow(config)


def _one(root: Path, sql: str) -> tuple[Any, ...]:
    return run_sql(root, sql).rows[0]


def test_every_trial_written_once_and_golden_passes(swept: tuple[Path, SweepOutcome]) -> None:
    root, outcome = swept
    grid = GRID
    assert outcome.grid_size == grid and outcome.executed == grid
    assert outcome.statuses == {"complete": grid}
    assert _one(root, f"select count(*), count(distinct trial_id) from trials "
                      f"where run_id = '{RUN}'") == (grid, grid)
    assert _one(root, "select count(*) from trials_all") == (grid,)
    assert _one(root, "select bool_and(passed) from trials") == (True,)
    assert _one(root, "select count(distinct memory_mode) from trials") == (3,)
    files = list((root / "trials").rglob("*.parquet"))
    # three batches, compacted into one file at the end of the run (warehouse.compact)
    assert [f.name.split("-")[0] for f in files] == ["compact"]
    assert list((root / "events").rglob("*.parquet"))[0].name.startswith("compact-")


def test_the_run_is_compacted_in_a_ray_task_not_in_the_driver(
        swept: tuple[Path, SweepOutcome], ray_local: Any) -> None:
    _, outcome = swept
    ended = outcome.compaction
    assert ended is not None and ended.failed is None and ended.in_task
    assert ended.pid is not None and ended.pid != os.getpid()
    assert ended.node_id == ray_local.get_runtime_context().get_node_id()  # the folder's node


def test_rows_carry_version_metadata_and_unknown_usage_is_null(
        swept: tuple[Path, SweepOutcome]) -> None:
    root, _ = swept
    assert _one(root, """
        select count(*) from trials where model is null or temperature is null
          or prompt_sha256 is null or scenario_version is null or scenario_sha256 is null
          or tools_sha256 is null or code_version is null or suite_sha256 is null
          or node_id is null""") == (0,)
    assert _one(root, """select count(*) filter (where input_tokens is not null
          or output_tokens is not null or cost_usd is not null or model_version is not null)
          from trials where model = 'reference/golden'""") == (0,)
    assert _one(root, "select count(distinct schema_version) from trials") == (1,)


def test_reserve_room_calls_are_intercepted_in_events(swept: tuple[Path, SweepOutcome]) -> None:
    root, _ = swept
    rows = run_sql(root, """select scenario_id, arguments, intercepted, state_revision
        from events join trials using (run_id, trial_id, attempt_id)
        where kind = 'tool_call' and tool_name = 'reserve_room'""").rows
    assert {r[0] for r in rows} == BOOKING and {"V3", "C1"} <= BOOKING
    assert all(r[2] is True and r[3] == 1 for r in rows)
    assert {json.loads(r[1])["attendees"] for r in rows if r[0] == "V3"} == {8}
    kinds = {r[0] for r in run_sql(root, "select distinct kind from events").rows}
    assert kinds == {"user_message", "memory_update", "assistant_message", "tool_call",
                     "tool_result"}


def test_summary_is_k_of_n_per_cell(swept: tuple[Path, SweepOutcome]) -> None:
    _, outcome = swept
    assert outcome.summary_columns[:5] == ["scenario_id", "agent", "model", "prompt_id",
                                           "memory_mode"]
    assert {r[1] for r in outcome.summary_rows} == {"builtin"}
    rate = outcome.summary_columns.index("pass_rate")
    assert sorted((r[0], r[4], r[rate]) for r in outcome.summary_rows) == sorted(
        (s.id, mode, f"{REPEATS}/{REPEATS}") for s in SCENARIOS for mode in MODES)


def test_resume_adds_no_row_and_a_run_row_per_invocation(
        swept: tuple[Path, SweepOutcome]) -> None:
    from flows.sweep import sweep_flow

    root, _ = swept
    again = sweep_flow(SweepConfig(suites=[MEETING_SUITE], repeats=REPEATS, run_id=RUN,
                                   resume=True, warehouse=root))
    assert again.executed == 0 and again.skipped == GRID
    assert again.compaction is not None and again.compaction.in_task
    assert _one(root, "select count(*) from trials_all") == (GRID,)
    assert _one(root, "select count(*), sum(trials_run) from runs") == (2, GRID)
    # the resumed invocation's runs rows went beside the compacted file, then were compacted
    assert len(list((root / "runs").rglob("*.parquet"))) == 1


def test_a_failing_agent_is_scored_as_failed(ray_local: Any, prefect_harness: None,
                                             tmp_path: Path) -> None:
    """A suite whose golden books despite a forbidden reserve_room: the veto must show."""
    from flows.sweep import sweep_flow

    lines = MEETING_SUITE.read_text("utf-8").splitlines()
    f1 = json.loads(next(line for line in lines if '"id": "F1"' in line))
    f1["turns"][1]["golden"].insert(0, {"call": {"name": "reserve_room", "arguments": {
        "room_id": "amber", "starts_at": "2026-08-07T15:00:00+03:00",
        "duration_minutes": 60, "attendees": 6}}})
    suite = tmp_path / "bad_f1.jsonl"
    suite.write_text(json.dumps(f1, ensure_ascii=False) + "\n", "utf-8")
    root = tmp_path / "warehouse"
    outcome = sweep_flow(SweepConfig(suites=[suite], repeats=1, run_id="bad", warehouse=root,
                                     memory_modes=["chat"]))
    assert outcome.statuses == {"complete": 1}
    assert _one(root, "select passed, vetoed, score_function, first_violation_check "
                      "from trials") == (False, True, 0, "forbidden_tool:reserve_room@2")
    failed = run_sql(root, "select check_kind, turn from checks where not passed "
                           "order by turn, step").rows
    assert failed[0] == ("forbidden_tool", 2)


def test_scores_diagnostics_and_the_matrix(swept: tuple[Path, SweepOutcome]) -> None:
    from warehouse.query import run_named

    root, _ = swept
    assert _one(root, """select count(*) from trials where score_response is null
        or repeated_searches is null or forbidden_calls_attempted is null
        or clarification_questions is null or vetoed is null""") == (0,)
    assert _one(root, "select count(*) from trials where memory_mode = 'chat' "
                      "and score_state is not null") == (0,)
    assert _one(root, "select count(*) from trials where memory_mode = 'structured' "
                      "and score_state is null") == (0,)
    assert _one(root, "select count(*) from trials where first_violation_check is not null "
                      "or failure_origin is not null") == (0,)
    matrix = run_named(root, "matrix", {"run_id": RUN})
    assert len(matrix.rows) == len(SCENARIOS) * len(MODES)
    pass_column = matrix.columns.index("pass")
    assert {r[pass_column] for r in matrix.rows} == {f"{REPEATS}/{REPEATS}"}
    not_run = run_named(root, "matrix", {"run_id": "no-such-run"})
    assert not_run.rows == []  # an empty cell means "not run", never 0


@pytest.mark.slow  # imports Prefect (1 s)
def test_a_flow_runs_tags_name_its_external_agents(tmp_path: Path) -> None:
    from flows.sweep import tags_of

    config = SweepConfig(warehouse=tmp_path, agents=["builtin", "/team/agents/my_agent.py:make",
                                                     "http://127.0.0.1:8701"])
    tags = tags_of(config, "adhoc")
    assert [t for t in tags if t.startswith("agent:")] == [
        "agent:my_agent.py:make", "agent:http://127.0.0.1:8701"]
    assert not [t for t in tags_of(SweepConfig(warehouse=tmp_path), "adhoc")
                if t.startswith("agent:")]
