"""Compaction (warehouse.compact): the same rows before and after, fewer files, a crash at any
step leaves a readable warehouse, a run being run is never compacted, a resume adds beside."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.execution.runlock import run_lock
from pipeline.sweep.compaction import compact_runs
from warehouse import compact, query
from warehouse.check import check_warehouse, leftover_paths
from warehouse.compact import compact_run
from warehouse.query import run_sql
from warehouse.schema import TABLES
from warehouse.writer import WarehouseWriter

RUN = "r1"


def _trial(n: int, attempt: str = "a1", status: str = "complete") -> dict[str, Any]:
    at = datetime(2026, 11, 30, 12, n % 60, tzinfo=UTC)
    return {
        "run_id": RUN, "trial_id": f"t{n}", "attempt_id": attempt, "scenario_id": f"S{n % 3}",
        "scenario_version": 1, "scenario_sha256": "s", "scenario_class": "revision",
        "suite_id": "x", "suite_sha256": "h", "domain": "meeting_rooms",
        "model": f"m{n % 2}", "provider": "reference", "temperature": 0.0,
        "generation_params": "{}", "prompt_id": "p", "prompt_sha256": "ph",
        "tools_sha256": "th", "memory_mode": "chat", "repeat": n % 4, "status": status,
        "passed": None if status == "incomplete" else n % 2 == 0, "turns": 1,
        "model_calls": 1, "tool_calls": 0, "latency_ms": 1.0, "started_at": at,
        "finished_at": at, "code_version": "test",
    }


def _batch(first: int, count: int, attempt: str = "a1") -> dict[str, list[dict[str, Any]]]:
    trials = [_trial(n, attempt) for n in range(first, first + count)]
    # events written out of seq order inside a batch: compaction must sort them by seq
    events = [{"run_id": RUN, "trial_id": t["trial_id"], "attempt_id": attempt, "seq": seq,
               "turn": 1, "step": seq, "kind": "user_message", "content": f"{t['trial_id']}:{seq}"}
              for t in trials for seq in (2, 0, 1)]
    checks = [{"run_id": RUN, "trial_id": t["trial_id"], "attempt_id": attempt,
               "check_id": check, "check_kind": "state", "passed": True, "detail": ""}
              for t in trials for check in ("zz", "aa")]
    at = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    attempts = [{"run_id": RUN, "trial_id": t["trial_id"], "attempt_id": attempt, "attempt": 1,
                 "outcome": "complete", "started_at": at, "finished_at": at} for t in trials]
    return {"trials": trials, "events": events, "checks": checks, "attempts": attempts}


def _warehouse(root: Path, batches: int = 5) -> None:
    writer = WarehouseWriter(root, RUN)
    for b in range(batches):
        writer.write_batch(_batch(b * 4, 4))


def _rows(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the run, as read from its files (sorted: a multiset)."""
    found = {}
    for name, table in TABLES.items():
        files = sorted((root / name / f"run_id={RUN}").glob("*.parquet"))
        if not files:
            continue
        data = pa.concat_tables([pq.read_table(f).select(table.column_names) for f in files])
        found[name] = sorted(map(repr, data.to_pylist()))
    return found


def _files(root: Path) -> int:
    return len(list(root.glob(f"*/run_id={RUN}/*.parquet")))


def _views(root: Path) -> list[tuple[Any, ...]]:
    return run_sql(root, "SELECT (SELECT count(*) FROM trials), (SELECT count(*) FROM events), "
                   "(SELECT count(*) FROM checks), (SELECT count(*) FROM attempts)").rows


def test_rows_are_the_same_and_files_fewer(tmp_path: Path) -> None:
    _warehouse(tmp_path)
    before, views, files = _rows(tmp_path), _views(tmp_path), _files(tmp_path)
    done = compact_run(tmp_path, RUN)
    assert _rows(tmp_path) == before and _views(tmp_path) == views == [(20, 60, 40, 20)]
    assert files == 20 and _files(tmp_path) == 4
    assert {t.table for t in done} == {"trials", "events", "checks", "attempts"}
    assert check_warehouse(tmp_path) == (4, []) and leftover_paths(tmp_path) == []


@pytest.mark.slow  # the scale: 10,000 trials in 50 batches
def test_a_run_of_ten_thousand_trials_compacts_to_a_handful_of_files_per_table(
        tmp_path: Path) -> None:
    """The issue's size: 10,000 trials written in 50 batches (a sweep's cadence), compacted:
    every row and every view's answer the same, a file or so per table, the check clean."""
    writer = WarehouseWriter(tmp_path, RUN)
    for b in range(50):
        writer.write_batch(_batch(b * 200, 200))
    before, views = _rows(tmp_path), _views(tmp_path)
    by_cell = run_sql(tmp_path, "SELECT scenario_id, model, count(*), count(*) FILTER "
                      "(WHERE passed) FROM trials GROUP BY ALL ORDER BY ALL", all_runs=True).rows
    assert views == [(10_000, 30_000, 20_000, 10_000)] and _files(tmp_path) == 200
    compact_run(tmp_path, RUN)
    assert _rows(tmp_path) == before and _views(tmp_path) == views
    assert run_sql(tmp_path, "SELECT scenario_id, model, count(*), count(*) FILTER "
                   "(WHERE passed) FROM trials GROUP BY ALL ORDER BY ALL",
                   all_runs=True).rows == by_cell
    per_table = {name: len(list((tmp_path / name / f"run_id={RUN}").glob("*.parquet")))
                 for name in ("trials", "events", "checks", "attempts")}
    assert all(1 <= count <= 3 for count in per_table.values()), per_table
    assert check_warehouse(tmp_path) == (sum(per_table.values()), [])


def test_compacted_files_are_sorted_by_cell_and_keep_each_trials_order(tmp_path: Path) -> None:
    _warehouse(tmp_path)
    compact_run(tmp_path, RUN)
    (trials,) = (tmp_path / "trials" / f"run_id={RUN}").glob("compact-*.parquet")
    cells = pq.read_table(trials).select(["scenario_id", "model", "repeat"]).to_pylist()
    keys = [(c["scenario_id"], c["model"], c["repeat"]) for c in cells]
    assert keys == sorted(keys)
    (events,) = (tmp_path / "events" / f"run_id={RUN}").glob("compact-*.parquet")
    rows = pq.read_table(events).to_pylist()
    assert [r["seq"] for r in rows if r["trial_id"] == "t7"] == [0, 1, 2]
    (checks,) = (tmp_path / "checks" / f"run_id={RUN}").glob("compact-*.parquet")
    order = [r["check_id"] for r in pq.read_table(checks).to_pylist() if r["trial_id"] == "t7"]
    assert order == ["zz", "aa"]  # no seq: the order written is kept
    meta = pq.ParquetFile(trials).metadata.row_group(0).column(0)
    assert meta.compression == "ZSTD"


class Crash(BaseException):
    """A kill: no handler of the code under test runs (a plain error cleans up after itself)."""


def _crash(*_: Any, **__: Any) -> None:
    raise Crash


@pytest.mark.parametrize("step", ["write", "exchange", "remove"])
def test_a_crash_at_any_step_leaves_the_same_rows_readable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    _warehouse(tmp_path)
    before, views = _rows(tmp_path), _views(tmp_path)
    target = {"write": "write_parquet_batches", "exchange": "exchange_folders",
              "remove": "_rescue_late_files"}[step]
    with monkeypatch.context() as patch:
        patch.setattr(compact, target, _crash)
        with pytest.raises(Crash):
            compact_run(tmp_path, RUN)
    assert _rows(tmp_path) == before and _views(tmp_path) == views
    assert leftover_paths(tmp_path)  # the hidden folder of the set that is not visible
    assert check_warehouse(tmp_path)[1] == []
    compact_run(tmp_path, RUN)  # the next compaction removes the leftovers and finishes
    assert leftover_paths(tmp_path) == [] and _rows(tmp_path) == before
    assert _files(tmp_path) == 4


def test_an_error_while_writing_leaves_nothing(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _warehouse(tmp_path, 2)
    before = _rows(tmp_path)

    def error(*_: Any, **__: Any) -> None:
        raise OSError("disk went away")

    monkeypatch.setattr(compact, "write_parquet_batches", error)
    with pytest.raises(OSError, match="went away"):
        compact_run(tmp_path, RUN)
    assert _rows(tmp_path) == before and leftover_paths(tmp_path) == []


def test_a_file_written_during_the_swap_is_kept(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer that takes no run lock (a judge) renames a part into the old folder after it
    was read: the file joins the new set."""
    _warehouse(tmp_path, 2)
    exchange = compact.exchange_folders

    def late_then_exchange(a: Path, b: Path) -> None:
        if b.parent.name == "trials":
            WarehouseWriter(tmp_path, RUN).write_batch({"trials": [_trial(99)]})
        exchange(a, b)

    monkeypatch.setattr(compact, "exchange_folders", late_then_exchange)
    compact_run(tmp_path, RUN)
    assert run_sql(tmp_path, "SELECT count(*) FROM trials").rows == [(9,)]
    assert leftover_paths(tmp_path) == []


def test_compaction_is_refused_while_the_run_lock_is_held(tmp_path: Path) -> None:
    _warehouse(tmp_path, 2)
    home = tmp_path / "home"
    with run_lock(RUN, home):
        (done,) = compact_runs(tmp_path, [RUN], home)
    assert done.refused and "already being run" in done.refused and done.tables == []
    assert _files(tmp_path) == 8
    (done,) = compact_runs(tmp_path, None, home)
    assert done.refused is None and _files(tmp_path) == 4


def test_a_resume_after_compaction_adds_beside_and_compacts_again(tmp_path: Path) -> None:
    _warehouse(tmp_path, 2)
    compact_run(tmp_path, RUN)
    writer = WarehouseWriter(tmp_path, RUN)  # the resumed invocation
    writer.write_batch(_batch(8, 4))
    writer.write_batch({"trials": [_trial(0, "a2")]})  # a trial run again: a second row
    assert _files(tmp_path) == 4 + 4 + 1
    assert _views(tmp_path) == [(12, 36, 24, 12)]
    before = _rows(tmp_path)
    compact_run(tmp_path, RUN)
    assert _rows(tmp_path) == before and _files(tmp_path) == 4
    assert _views(tmp_path) == [(12, 36, 24, 12)]


def test_nothing_to_do_for_a_run_of_one_batch(tmp_path: Path) -> None:
    _warehouse(tmp_path, 1)
    assert compact_run(tmp_path, RUN) == []
    assert _files(tmp_path) == 4


@pytest.mark.slow  # starts an agentsweep process
def test_the_commands_a_user_runs(tmp_path: Path) -> None:
    """`warehouse check` lists a leftover, `warehouse compact` is refused while the run is
    being run (exit 1), then compacts and removes the leftover."""
    from helpers.commands import agentsweep

    home = tmp_path / "home"
    root = home / "warehouse"
    _warehouse(root)
    (root / "events" / f".compact-{RUN}+0123456789ab").mkdir()  # a crashed compaction's
    check = agentsweep(home, "warehouse", "check")
    assert check.returncode == 0 and "leftover" in check.stderr, check.stderr
    with run_lock(RUN, home):
        refused = agentsweep(home, "warehouse", "compact", "--run-id", RUN)
    assert refused.returncode == 1 and "already being run" in refused.stderr
    assert _files(root) == 20
    done = agentsweep(home, "warehouse", "compact")
    assert done.returncode == 0 and f"{RUN}: 20 file(s) -> 4" in done.stdout, done.stderr
    again = agentsweep(home, "warehouse", "check")
    assert "leftover" not in again.stderr and "4 file(s)" in again.stdout
    assert "nothing to compact" in agentsweep(home, "warehouse", "compact").stdout


def test_a_full_disk_is_refused_before_anything_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from warehouse.diskspace import DiskFull

    _warehouse(tmp_path, 2)
    monkeypatch.setattr(compact, "free_bytes", lambda _: 1024)
    with pytest.raises(DiskFull):
        compact_run(tmp_path, RUN)
    assert _files(tmp_path) == 8 and leftover_paths(tmp_path) == []


# --- the chosen mark (warehouse.chosen): runs the views read without picking attempts ---------

EVENTS_OF_T0 = "SELECT attempt_id, content FROM events WHERE trial_id = 't0' ORDER BY seq"
PICKED = ("SELECT trial_id, attempt_id, status FROM trials ORDER BY trial_id",
          "SELECT trial_id, attempt_id, content FROM events ORDER BY ALL",
          "SELECT trial_id, attempt_id, check_id FROM checks ORDER BY ALL")


def _picked(root: Path) -> list[list[tuple[Any, ...]]]:
    return [run_sql(root, sql).rows for sql in PICKED]


def _marks(root: Path) -> dict[str, set[str]]:
    return {name: {p.name.rsplit("-", 1)[-1] for p in (root / name / f"run_id={RUN}").glob(
        "compact-*.parquet")} for name in ("trials", "events", "checks", "attempts")}


def _read_as_is(root: Path) -> dict[str, bool]:
    """Whether the views read the run's files of each table without picking attempts."""
    sources = query._local_sources(root, None)
    return {name: bool(sources[name].chosen) for name in ("trials", "events", "checks")}


def _later(row: dict[str, Any], minutes: int = 30) -> dict[str, Any]:
    return {**row, "finished_at": row["finished_at"] + timedelta(minutes=minutes)}


def test_a_run_of_one_attempt_per_trial_is_marked_chosen_and_read_as_is(tmp_path: Path) -> None:
    _warehouse(tmp_path)
    before = _picked(tmp_path)
    compact_run(tmp_path, RUN)
    assert _marks(tmp_path) == {"trials": {"chosen.parquet"}, "events": {"chosen.parquet"},
                                "checks": {"chosen.parquet"}, "attempts": {"all.parquet"}}
    assert _read_as_is(tmp_path) == {"trials": True, "events": True, "checks": True}
    assert _picked(tmp_path) == before


def test_a_second_attempt_written_after_compaction_is_picked_again(tmp_path: Path) -> None:
    _warehouse(tmp_path)
    compact_run(tmp_path, RUN)
    # t1 run again, its trial row only (it stopped before its first event): the events and
    # checks of t1's first attempt, in files still marked chosen, are no longer chosen
    WarehouseWriter(tmp_path, RUN).write_batch({"trials": [_later(_trial(1, "a2"))]})
    assert run_sql(tmp_path, "SELECT count(*) FROM events WHERE trial_id = 't1'").rows == [(0,)]
    assert run_sql(tmp_path, "SELECT count(*) FROM checks WHERE trial_id = 't1'").rows == [(0,)]
    resumed = _batch(0, 1, attempt="a2")  # t0 run again, finished later: it is the chosen one
    resumed["trials"] = [_later(resumed["trials"][0])]
    resumed["events"] = [{**e, "content": f"again:{e['seq']}"} for e in resumed["events"]]
    WarehouseWriter(tmp_path, RUN).write_batch(resumed)
    assert _read_as_is(tmp_path) == {"trials": False, "events": False, "checks": False}
    assert run_sql(tmp_path, "SELECT attempt_id FROM trials WHERE trial_id = 't0'").rows == [
        ("a2",)]
    assert run_sql(tmp_path, EVENTS_OF_T0).rows == [("a2", f"again:{s}") for s in (0, 1, 2)]
    picked = _picked(tmp_path)
    compact_run(tmp_path, RUN)  # two attempts of t0 now: nothing can be claimed
    assert _marks(tmp_path)["trials"] == {"all.parquet"}
    assert _marks(tmp_path)["events"] == {"all.parquet"}
    assert _picked(tmp_path) == picked


def test_a_run_with_an_incomplete_attempt_is_marked_all_and_still_picked(tmp_path: Path) -> None:
    writer = WarehouseWriter(tmp_path, RUN)
    first = _batch(0, 4)
    first["trials"][0] = {**first["trials"][0], "status": "incomplete", "passed": None}
    writer.write_batch(first)
    writer.write_batch(_batch(4, 4))
    again = _batch(0, 1, attempt="a2")
    writer.write_batch(again)
    before = _picked(tmp_path)
    assert before[0][0] == ("t0", "a2", "complete")
    compact_run(tmp_path, RUN)
    assert _marks(tmp_path)["trials"] == {"all.parquet"}
    assert _read_as_is(tmp_path)["events"] is False
    assert _picked(tmp_path) == before
    assert [r[0] for r in run_sql(tmp_path, EVENTS_OF_T0).rows] == ["a2"] * 3


def test_rows_of_no_trial_keep_their_table_picked(tmp_path: Path) -> None:
    writer = WarehouseWriter(tmp_path, RUN)
    writer.write_batch(_batch(0, 4))
    stray = _batch(50, 1)  # events of an attempt whose trial row never landed
    batch = _batch(4, 4)
    writer.write_batch({**batch, "events": batch["events"] + stray["events"]})
    before = _picked(tmp_path)
    assert not any(row[0] == "t50" for row in before[1])
    compact_run(tmp_path, RUN)
    assert _marks(tmp_path)["trials"] == {"chosen.parquet"}
    assert _marks(tmp_path)["events"] == {"all.parquet"}
    assert _marks(tmp_path)["checks"] == {"chosen.parquet"}
    assert _read_as_is(tmp_path) == {"trials": True, "events": False, "checks": True}
    assert _picked(tmp_path) == before


def test_files_compacted_before_marks_are_compacted_again_once(tmp_path: Path) -> None:
    _warehouse(tmp_path)
    compact_run(tmp_path, RUN)
    for path in tmp_path.glob(f"*/run_id={RUN}/compact-*.parquet"):  # as an older version named
        path.rename(path.with_name(path.name.rsplit("-", 1)[0] + ".parquet"))
    assert _read_as_is(tmp_path) == {"trials": False, "events": False, "checks": False}
    before = _picked(tmp_path)
    assert {t.table for t in compact_run(tmp_path, RUN)} == {"trials", "events", "checks",
                                                              "attempts"}
    assert _read_as_is(tmp_path) == {"trials": True, "events": True, "checks": True}
    assert _picked(tmp_path) == before and compact_run(tmp_path, RUN) == []
