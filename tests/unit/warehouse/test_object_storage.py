"""The warehouse on object storage (warehouse.location, warehouse.objectstore), against a real
S3 API on loopback (moto's server): a batch is read once its commit record lands, never before;
a crash between parts and commit leaves invisible garbage that check lists and vacuum removes;
the views and .sql files read it as they read a folder."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from unit.warehouse.test_compact import RUN, _batch

from warehouse import compact, objectstore, query, writer
from warehouse.check import check_warehouse, leftover_paths
from warehouse.chosen import mark_of
from warehouse.compact import compact_run
from warehouse.location import LocationError, S3Location, parse_location
from warehouse.objectstore import committed_parts, uncommitted, vacuum
from warehouse.query import run_named, run_sql, run_user_sql
from warehouse.writer import WarehouseWriter, write_parquet_object


def _rows(root: Any) -> list[tuple[Any, ...]]:
    return run_sql(root, "SELECT trial_id, count(*) FROM trials GROUP BY 1 ORDER BY 1").rows


def test_a_location_is_a_folder_or_a_bucket_prefix() -> None:
    assert parse_location("/tmp/wh") == Path("/tmp/wh")
    assert parse_location("s3://my-bucket/a/b/") == S3Location("my-bucket", "a/b")
    assert str(S3Location("my-bucket", "a/b")) == "s3://my-bucket/a/b"
    assert parse_location("s3://my-bucket") == S3Location("my-bucket", "")
    for bad in ("s3://B/x", "s3://ok-bucket/a//b", "s3://ok-bucket/a/../b", "s3://x"):
        with pytest.raises(LocationError):
            parse_location(bad)


def test_batches_are_read_through_duckdb_with_the_same_views(s3_warehouse: S3Location) -> None:
    out = WarehouseWriter(s3_warehouse, RUN)
    out.write_batch(_batch(0, 4))
    out.write_batch(_batch(4, 4))
    assert [r[0] for r in _rows(s3_warehouse)] == sorted(f"t{n}" for n in range(8))
    assert all(r[1] == 1 for r in _rows(s3_warehouse))
    events = run_sql(s3_warehouse, "SELECT count(*) FROM events").rows[0][0]
    assert events == 8 * 3
    assert run_named(s3_warehouse, "run_exists", {"run_id": RUN}).rows[0][0]
    parts = committed_parts(s3_warehouse)
    assert len(parts["trials"]) == 2 and len(parts["events"]) == 2
    assert all(k.startswith(f"trials/run_id={RUN}/part-") for k in parts["trials"])
    assert len(out.objects_written) == 8 and out.files_written == []


def test_user_sql_reads_the_bucket_and_nothing_beside_it(s3_warehouse: S3Location) -> None:
    WarehouseWriter(s3_warehouse, RUN).write_batch(_batch(0, 2))
    assert run_user_sql(s3_warehouse, "SELECT count(*) FROM trials").rows == [(2,)]
    other = f"agentsweep-s3://{s3_warehouse.bucket}/elsewhere/x.parquet"
    with pytest.raises(duckdb.PermissionException, match="disabled by configuration"):
        run_user_sql(s3_warehouse, f"SELECT * FROM read_parquet('{other}')")


def test_a_crash_between_parts_and_commit_leaves_nothing_visible(
        s3_warehouse: S3Location) -> None:
    WarehouseWriter(s3_warehouse, RUN).write_batch(_batch(0, 2))
    # What a driver killed after writing its parts leaves: parts, no commit record.
    key = objectstore.part_key("trials", RUN, "part-crashed.parquet")
    write_parquet_object(s3_warehouse, key, writer.to_arrow(writer.TABLES["trials"],
                                                            _batch(10, 3)["trials"]))
    assert [r[0] for r in _rows(s3_warehouse)] == ["t0", "t1"]
    assert [g.key for g in uncommitted(s3_warehouse)] == [key]
    assert uncommitted(s3_warehouse, older_than=timedelta(hours=1)) == []  # too young to remove
    assert [g.key for g in vacuum(s3_warehouse, timedelta(0))] == [key]
    assert uncommitted(s3_warehouse) == []
    assert [r[0] for r in _rows(s3_warehouse)] == ["t0", "t1"]  # nothing committed was lost


def test_a_batch_that_fails_before_its_commit_removes_its_parts(
        s3_warehouse: S3Location, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> str:
        raise OSError("connection reset")

    monkeypatch.setattr(writer, "put_object", refuse)
    with pytest.raises(OSError, match="connection reset"):
        WarehouseWriter(s3_warehouse, RUN).write_batch(_batch(0, 2))
    assert uncommitted(s3_warehouse) == []
    assert _rows(s3_warehouse) == []


def test_an_empty_bucket_has_typed_empty_views(s3_warehouse: S3Location) -> None:
    assert run_sql(s3_warehouse, "SELECT count(*) FROM trials").rows == [(0,)]
    assert run_named(s3_warehouse, "runs_list").rows == []


EVENTS_SQL = "SELECT trial_id, seq, content FROM events ORDER BY trial_id, seq"


def _filled(root: S3Location, batches: int = 4) -> WarehouseWriter:
    out = WarehouseWriter(root, RUN)
    for b in range(batches):
        out.write_batch(_batch(b * 4, 4))
    return out


def test_compaction_swaps_in_one_commit_record_and_keeps_every_row(
        s3_warehouse: S3Location) -> None:
    _filled(s3_warehouse)
    before = (_rows(s3_warehouse), run_sql(s3_warehouse, EVENTS_SQL).rows)
    done = compact_run(s3_warehouse, RUN)
    assert {t.table: (t.files_before, t.files_after) for t in done}["trials"] == (4, 1)
    assert (_rows(s3_warehouse), run_sql(s3_warehouse, EVENTS_SQL).rows) == before
    parts = committed_parts(s3_warehouse)
    assert all(len(parts[t]) == 1 for t in ("trials", "events", "checks", "attempts"))
    # one attempt per trial: marked, and the views read those files without picking
    assert [mark_of(parts[t][0]) for t in ("trials", "events", "checks", "attempts")] == [
        "chosen", "chosen", "chosen", "all"]
    assert query._object_sources(s3_warehouse, None)["events"].rest == ()
    assert len(objectstore.live_records(s3_warehouse)) == 1
    assert uncommitted(s3_warehouse) == []  # the replaced parts and records are gone
    assert compact_run(s3_warehouse, RUN) == []  # nothing written since
    # a resumed invocation adds beside the compacted files; the next compaction takes both
    WarehouseWriter(s3_warehouse, RUN).write_batch(_batch(100, 2))
    assert len(_rows(s3_warehouse)) == 18
    assert [t.files_after for t in compact_run(s3_warehouse, RUN)] == [1, 1, 1, 1]
    assert len(_rows(s3_warehouse)) == 18


def test_a_crash_before_the_compaction_commit_leaves_the_old_set(
        s3_warehouse: S3Location, monkeypatch: pytest.MonkeyPatch) -> None:
    _filled(s3_warehouse)
    before = run_sql(s3_warehouse, EVENTS_SQL).rows

    def killed(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt  # stands for a kill: and nothing cleans up after it
    monkeypatch.setattr(compact, "commit_replacement", killed)
    monkeypatch.setattr(compact, "delete_objects", lambda *a, **k: None)
    with pytest.raises(KeyboardInterrupt):
        compact_run(s3_warehouse, RUN)
    assert run_sql(s3_warehouse, EVENTS_SQL).rows == before
    garbage = uncommitted(s3_warehouse)
    assert garbage and all("/compact-" in g.key for g in garbage)
    vacuum(s3_warehouse, timedelta(0))
    assert run_sql(s3_warehouse, EVENTS_SQL).rows == before and uncommitted(s3_warehouse) == []


def test_a_crash_after_the_compaction_commit_leaves_the_new_set_once(
        s3_warehouse: S3Location, monkeypatch: pytest.MonkeyPatch) -> None:
    _filled(s3_warehouse)
    before = run_sql(s3_warehouse, EVENTS_SQL).rows
    monkeypatch.setattr(compact, "remove_replaced", lambda *a, **k: None)
    compact_run(s3_warehouse, RUN)
    assert run_sql(s3_warehouse, EVENTS_SQL).rows == before  # each row once
    why = {g.why for g in uncommitted(s3_warehouse)}
    assert why == {"no commit record names it", "a commit record a compaction replaced"}
    vacuum(s3_warehouse, timedelta(0))
    assert run_sql(s3_warehouse, EVENTS_SQL).rows == before and uncommitted(s3_warehouse) == []


def test_a_batch_committed_during_a_compaction_stays_visible(
        s3_warehouse: S3Location, monkeypatch: pytest.MonkeyPatch) -> None:
    _filled(s3_warehouse)
    real = compact._write_sorted_objects
    late: list[int] = []

    def with_a_judge(*args: Any) -> Any:
        if not late:  # another writer (no run lock) commits while the run is being compacted
            late.append(1)
            WarehouseWriter(s3_warehouse, RUN).write_batch(_batch(200, 1))
        return real(*args)
    monkeypatch.setattr(compact, "_write_sorted_objects", with_a_judge)
    compact_run(s3_warehouse, RUN)
    assert len(_rows(s3_warehouse)) == 17


def test_check_reads_committed_objects_and_names_a_damaged_one(
        s3_warehouse: S3Location) -> None:
    _filled(s3_warehouse, 2)
    count, damaged = check_warehouse(s3_warehouse)
    assert count == 8 and damaged == []
    key = committed_parts(s3_warehouse)["trials"][0]
    objectstore.put_object(s3_warehouse, key, b"PAR1 not parquet at all PAR1")
    count, damaged = check_warehouse(s3_warehouse)
    assert [d.path for d in damaged] == [f"{s3_warehouse}/{key}"]
    assert leftover_paths(s3_warehouse) == []


def test_threads_reading_one_file_each_get_their_own_bytes(s3_warehouse: S3Location) -> None:
    """DuckDB reads a Parquet object from several threads through one file object, each as
    seek then read: with a shared position another thread's seek landed in between and DuckDB
    failed with "don't know what type" (or decoded the wrong bytes)."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    from warehouse.location import client
    from warehouse.object_reads import duckdb_filesystem

    content = bytes(range(256)) * 4096  # 1 MiB: every offset's byte is offset % 256
    key = f"{s3_warehouse.prefix}/probe.bin"
    client().put_object(Bucket=s3_warehouse.bucket, Key=key, Body=content)
    handle = duckdb_filesystem().open(s3_warehouse.path("probe.bin"), "rb")

    def reads(worker: int) -> list[bool]:
        outcomes = []
        for step in range(60):
            offset = (worker * 7919 + step * 104729) % (len(content) - 4096)
            handle.seek(offset)
            time.sleep(0)  # another thread's turn, as DuckDB's threads (outside the GIL) take it
            outcomes.append(handle.read(4096) == content[offset:offset + 4096])
        return outcomes

    with ThreadPoolExecutor(8) as pool:
        results = [ok for outcome in pool.map(reads, range(8)) for ok in outcome]
    assert len(results) == 480 and all(results)
    handle.seek(-10, 2)
    assert handle.tell() == len(content) - 10 and handle.read() == content[-10:]
    handle.close()


def test_a_part_is_asked_about_once_and_its_footer_fetched_once(
        s3_warehouse: S3Location, monkeypatch: pytest.MonkeyPatch) -> None:
    """DuckDB asks exists, info twice, modified and opens each file (a HEAD each), then reads
    the footer, for every view that binds and every scan: at 1M trials ~3,000 requests for
    180 files. A part never changes, so one suffix-range GET answers its size, time and
    footer for the process's life; a later query requests only the column chunks it reads."""
    from warehouse.location import client
    from warehouse.object_reads import FACTS

    out = WarehouseWriter(s3_warehouse, RUN)
    for first in (0, 4, 8):
        out.write_batch(_batch(first, 4))
    parts = committed_parts(s3_warehouse)["trials"]
    s3 = client()
    requests: list[str] = []
    real_get, real_head = s3.get_object, s3.head_object

    def get_object(**kwargs: Any) -> Any:
        requests.append(f"GET {kwargs['Key']} {kwargs.get('Range')}")
        return real_get(**kwargs)

    def head_object(**kwargs: Any) -> Any:
        requests.append(f"HEAD {kwargs['Key']}")
        return real_head(**kwargs)

    monkeypatch.setattr(s3, "get_object", get_object)
    monkeypatch.setattr(s3, "head_object", head_object)
    FACTS.forget()
    query = "SELECT count(*), count(DISTINCT trial_id) FROM trials_all"
    expected = [(12, 12)]
    assert run_user_sql(s3_warehouse, query).rows == expected
    first = [r for r in requests if "trials/" in r]
    suffix = [r for r in first if r.endswith("bytes=-65536")]
    assert sorted(r.split()[1] for r in suffix) == sorted(s3_warehouse.key(p) for p in parts)
    requests.clear()
    assert run_user_sql(s3_warehouse, query).rows == expected  # a new connection, same parts
    again = [r for r in requests if "trials/" in r]
    assert not any(r.endswith("bytes=-65536") for r in again)  # no info, no footer again
    assert len(again) <= len(parts)  # at most the column chunks, one range per part here


def test_a_missing_part_is_file_not_found(s3_warehouse: S3Location) -> None:
    from warehouse.object_reads import duckdb_filesystem

    with pytest.raises(FileNotFoundError):
        duckdb_filesystem().info(s3_warehouse.path("trials/run_id=r/part-none.parquet"))


def test_a_later_command_reads_records_and_footers_from_disk(
        s3_warehouse: S3Location, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Commit records and parts are immutable: what one command read of them is kept on disk
    (a part's footer, or the whole of a small part) and the next command asks the bucket only
    for what is live (a LIST) and the column chunks it has not kept."""
    from warehouse import object_cache
    from warehouse.location import client
    from warehouse.object_reads import FACTS

    out = WarehouseWriter(s3_warehouse, RUN)
    for first in (0, 4, 8):
        out.write_batch(_batch(first, 4))
    monkeypatch.setattr(object_cache, "_kept", object_cache.ObjectCache(tmp_path / "kept"))
    s3 = client()
    requests: list[str] = []
    real_get = s3.get_object

    def get_object(**kwargs: Any) -> Any:
        requests.append(f"{kwargs['Key']} {kwargs.get('Range')}")
        return real_get(**kwargs)

    monkeypatch.setattr(s3, "get_object", get_object)
    sql = "SELECT trial_id, count(*) FROM events GROUP BY 1 ORDER BY 1"
    FACTS.forget()
    first = run_user_sql(s3_warehouse, sql).rows
    assert any("_commits/" in r for r in requests) and any("=-65536" in r for r in requests)
    kept = sorted((tmp_path / "kept").rglob("*"))
    assert kept and all(p.stat().st_size < 65536 for p in kept if p.is_file())
    requests.clear()
    FACTS.forget()  # a new process
    assert run_user_sql(s3_warehouse, sql).rows == first
    assert requests == []  # these parts are small: kept whole, so no GET at all (a LIST)
    # a batch committed since is listed, read and kept like the others
    out.write_batch(_batch(12, 4))
    FACTS.forget()
    assert len(run_user_sql(s3_warehouse, sql).rows) == len(first) + 4


def test_of_a_large_part_only_the_footer_is_kept(tmp_path: Path) -> None:
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq

    from warehouse.object_reads import TAIL_BYTES, _footer

    rows = 20_000
    path = tmp_path / "large.parquet"
    pq.write_table(pa.table({"x": [os.urandom(16).hex() for _ in range(rows)]}), path)
    data = path.read_bytes()
    assert len(data) > 4 * TAIL_BYTES
    footer = _footer(data[-TAIL_BYTES:], whole=False)
    assert data.endswith(footer) and len(footer) == int.from_bytes(data[-8:-4], "little") + 8
    padded = b"\0" * (len(data) - len(footer)) + footer  # what a reader sees of the kept bytes
    assert pq.read_metadata(pa.BufferReader(padded)).num_rows == rows
    assert _footer(data[-100:], whole=True) == data[-100:]


def test_the_object_cache_is_trimmed_oldest_first(tmp_path: Path) -> None:
    import os

    from warehouse.object_cache import ObjectCache

    first = ObjectCache(tmp_path, budget_bytes=10_000)
    for n in range(6):
        first.put(f"bucket/key-{n}", bytes(3_000))
        os.utime(first._path(f"bucket/key-{n}"), (1_000 + n, 1_000 + n))
    assert all(first.get(f"bucket/key-{n}") for n in range(6))  # one process trims once
    second = ObjectCache(tmp_path, budget_bytes=10_000)  # the next command that writes
    second.put("bucket/key-new", b"x")
    kept = [n for n in range(6) if second.get(f"bucket/key-{n}") is not None]
    assert kept == [3, 4, 5] and second.get("bucket/key-new") == b"x"


def test_asking_for_the_same_cache_again_keeps_it(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """``hygiene.warehouse_root()`` asks for the cache at each call: the folder is trimmed once
    per process, not once per call."""
    from warehouse import object_cache

    monkeypatch.setattr(object_cache, "_kept", None)
    object_cache.keep_on_disk(tmp_path / "a")
    first = object_cache.on_disk()
    object_cache.keep_on_disk(tmp_path / "a")
    assert object_cache.on_disk() is first
    object_cache.keep_on_disk(tmp_path / "b")
    assert object_cache.on_disk() is not first
    object_cache.keep_on_disk(None)
    assert object_cache.on_disk() is None


@pytest.mark.timeout(60)  # with boto3's own 60 s read timeout this request alone would hang
def test_an_endpoint_that_accepts_and_never_answers_is_given_up_within_the_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from warehouse import location, store_retry

    silent = socket.socket()  # listens, never accepts: connections open, no byte comes back
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{silent.getsockname()[1]}")
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv(store_retry.ENV, "0.5")
    monkeypatch.setattr(location, "READ_TIMEOUT_S", 0.2)
    location._client.cache_clear()
    try:
        with pytest.raises(store_retry.ObjectStoreUnavailable) as raised:
            objectstore.get_object(S3Location("bucket"), "runs/lease.json")
    finally:
        location._client.cache_clear()
        silent.close()
        store_retry._gave_up.clear()
    assert raised.value.cause == "ReadTimeoutError"
