from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from warehouse.query import run_sql
from warehouse.schema import SCHEMA_VERSION
from warehouse.writer import WarehouseError, WarehouseWriter, validate_run_id


def _trial(trial_id: str, attempt: str, status: str, minute: int) -> dict:
    at = datetime(2026, 11, 30, 12, minute, tzinfo=UTC)
    return {
        "run_id": "r1", "trial_id": trial_id, "attempt_id": attempt, "scenario_id": "V1",
        "scenario_version": 1, "scenario_sha256": "s", "scenario_class": "revision",
        "suite_id": "x", "suite_sha256": "h", "domain": "meeting_rooms",
        "model": "reference/golden", "provider": "reference", "temperature": 0.0,
        "generation_params": "{}", "prompt_id": "p", "prompt_sha256": "ph",
        "tools_sha256": "th", "memory_mode": "chat", "repeat": 0, "status": status,
        "passed": None if status == "incomplete" else True, "turns": 1, "model_calls": 1,
        "tool_calls": 0, "latency_ms": 1.0, "started_at": at, "finished_at": at,
        "code_version": "test",
    }


def _event(trial_id: str, attempt: str) -> dict:
    return {"run_id": "r1", "trial_id": trial_id, "attempt_id": attempt, "seq": 0, "turn": 1,
            "step": 0, "kind": "user_message", "content": "hi"}


def test_batch_is_written_atomically_with_schema_version(tmp_path: Path) -> None:
    writer = WarehouseWriter(tmp_path, "r1")
    writer.write_batch({"trials": [_trial("t1", "a1", "complete", 0)],
                        "events": [_event("t1", "a1")]})
    files = sorted(p.relative_to(tmp_path).parts[0] for p in tmp_path.rglob("*.parquet"))
    assert files == ["events", "trials"]
    assert not list(tmp_path.rglob("*.tmp"))
    table = pq.read_table(next((tmp_path / "trials").rglob("*.parquet")))
    assert table.column("schema_version").to_pylist() == [SCHEMA_VERSION]
    assert table.column("input_tokens").to_pylist() == [None]


def test_attempts_are_a_table_of_the_batch_like_any_other(tmp_path: Path) -> None:
    """One writer for every table: attempts share the batch's file name, its schema_version
    and its all-or-nothing rollback (pipeline.sweep.stages.BatchSink hands them in with their
    trials)."""
    at = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    attempt = {"run_id": "r1", "trial_id": "t1", "attempt_id": "a1", "attempt": 1,
               "outcome": "complete", "started_at": at, "finished_at": at}
    writer = WarehouseWriter(tmp_path, "r1")
    writer.write_batch({"attempts": [attempt], "trials": [_trial("t1", "a1", "complete", 0)]})
    writer.write_batch({"attempts": [{**attempt, "attempt": 2}]})  # retried, no final row yet
    names = {p.parent.parent.name: p.name for p in writer.files_written[:2]}
    assert set(names) == {"attempts", "trials"} and len(set(names.values())) == 1
    files = sorted((tmp_path / "attempts" / "run_id=r1").glob("part-*.parquet"))
    assert len(files) == 2
    assert pq.read_table(files[0]).column("schema_version").to_pylist() == [SCHEMA_VERSION]
    assert run_sql(tmp_path, "select max(attempt) from attempts").rows == [(2,)]


def test_bad_row_writes_nothing(tmp_path: Path) -> None:
    writer = WarehouseWriter(tmp_path, "r1")
    bad = _trial("t1", "a1", "complete", 0)
    bad["repeat"] = "zero"
    with pytest.raises(WarehouseError):
        writer.write_batch({"events": [_event("t1", "a1")], "trials": [bad]})
    with pytest.raises(WarehouseError, match="unknown columns"):
        writer.write_batch({"events": [{**_event("t1", "a1"), "mood": "happy"}]})
    assert list(tmp_path.rglob("*")) == []


def test_views_keep_one_row_per_trial_and_only_its_events(tmp_path: Path) -> None:
    writer = WarehouseWriter(tmp_path, "r1")
    writer.write_batch({"trials": [_trial("t1", "a1", "incomplete", 0)],
                        "events": [_event("t1", "a1")]})
    writer.write_batch({"trials": [_trial("t1", "a2", "complete", 5),
                                   _trial("t2", "b1", "complete", 5)],
                        "events": [_event("t1", "a2"), _event("t2", "b1")]})
    counts = run_sql(tmp_path, "select count(*), count(distinct trial_id) from trials").rows
    assert counts == [(2, 2)]
    assert run_sql(tmp_path, "select count(*) from trials_all").rows == [(3,)]
    chosen = run_sql(tmp_path, "select attempt_id from trials where trial_id = 't1'").rows
    assert chosen == [("a2",)]
    events = run_sql(tmp_path, "select attempt_id from events order by 1").rows
    assert events == [("a2",), ("b1",)]


def test_empty_warehouse_has_typed_empty_views(tmp_path: Path) -> None:
    result = run_sql(tmp_path, "select count(*), sum(input_tokens) from trials")
    assert result.rows == [(0, None)]


@pytest.mark.parametrize("bad", ["", "../x", "a/b", "x" * 200, "-lead"])
def test_run_id_is_validated(bad: str) -> None:
    with pytest.raises(WarehouseError):
        validate_run_id(bad)


def test_a_batch_that_cannot_be_written_whole_is_rolled_back(tmp_path: Path) -> None:
    (tmp_path / "trials").mkdir()
    (tmp_path / "trials" / "run_id=r1").write_text("in the way")  # the trials file cannot land
    writer = WarehouseWriter(tmp_path, "r1")
    with pytest.raises(OSError):
        writer.write_batch({"trials": [_trial("t1", "a1", "complete", 0)],
                            "events": [_event("t1", "a1")]})
    assert not list(tmp_path.rglob("*.parquet")) and not list(tmp_path.rglob("*.tmp"))
    assert writer.files_written == []


def test_files_of_an_older_schema_read_newer_columns_as_null(tmp_path: Path) -> None:
    """Months of traces span schema versions: a v1 file (no cached_input_tokens, no
    system_fingerprint) must not break today's SQL over the run it belongs to."""
    writer = WarehouseWriter(tmp_path, "r1")
    writer.write_batch({"trials": [_trial("t1", "a1", "complete", 0)],
                        "events": [{**_event("t1", "a1"), "cached_input_tokens": 7}]})
    for path in (tmp_path / "events").rglob("*.parquet"):  # the same rows as v1 wrote them
        old = pq.read_table(path)
        pq.write_table(old.drop_columns(["cached_input_tokens"]), path)
    WarehouseWriter(tmp_path, "r2").write_batch({"events": [
        {**_event("t2", "b1"), "run_id": "r2", "cached_input_tokens": 5}]})
    assert run_sql(tmp_path, "select count(*), count(cached_input_tokens) from events_all "
                             "where run_id = $run_id", {"run_id": "r1"}).rows == [(1, 0)]
    assert run_sql(tmp_path, "select run_id, cached_input_tokens from events_all order by 1"
                   ).rows == [("r1", None), ("r2", 5)]
