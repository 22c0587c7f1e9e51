"""Commits on object storage: a batch is visible once its commit record lands, never before.

S3 has no rename, so the local recipe (write a temporary file, rename it into place;
``warehouse.atomic``) cannot make a batch appear whole. Instead:

1. the batch's part files are written under the same names as on disk
   (``<table>/run_id=<run>/part-<time>-<uuid>.parquet``); nothing reads them yet;
2. a commit record, ``_commits/run_id=<run>/<batch>.json``, is created (a conditional create,
   ``If-None-Match: *``): it lists the batch's parts. One PUT, so it is there whole or not at
   all, and from that moment every reader reads the batch.

Readers (``warehouse.query``, compaction, exports) read only the parts of live commit records
(``committed_parts``), never a listing of the part folders. A crash between 1 and 2 leaves
parts no record names: invisible garbage that ``warehouse check`` lists (``uncommitted``) and
``warehouse vacuum`` removes (``vacuum``). A batch that fails with an error (not a kill)
removes its own parts at once.

Compaction (``compact_run``) writes the run's rows as a few large files, then one record of
kind ``compaction`` that lists them and names the records it ``replaces``: readers skip a
replaced record, so the one PUT swaps the old set for the new. Records of writers without the
run lock (a judge, a comparison) that land during a compaction are not replaced: their rows
stay visible beside the compacted ones. The replaced records and parts are then removed; a
crash before that leaves them as garbage for ``vacuum``, never visible twice.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from warehouse.location import S3Location, client
from warehouse.object_cache import on_disk
from warehouse.schema import TABLES
from warehouse.store_retry import retrying

COMMITS = "_commits"
"""Where commit records live, beside the table folders."""
RECORD_FORMAT = 1
READERS = 8
"""Commit records read at once (each is one small GET)."""
CONFLICT_STATUS = frozenset({409, 412})
"""What S3 answers when a conditional write loses (412 Precondition Failed; 409 while another
conditional write of the same key is in flight)."""


class CommitConflict(RuntimeError):
    """A conditional write found the object changed (or already there)."""


@dataclass(frozen=True)
class CommitRecord:
    key: str
    """The record's own key, relative to the warehouse prefix."""
    run_id: str
    kind: str
    parts: dict[str, list[str]]
    """Table name to part keys (relative to the prefix)."""
    replaces: list[str] = field(default_factory=list)

    def body(self) -> bytes:
        return json.dumps({"format": RECORD_FORMAT, "run_id": self.run_id, "kind": self.kind,
                           "parts": self.parts, "replaces": self.replaces},
                          sort_keys=True).encode()


def _status(exc: Exception) -> int | None:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return status if isinstance(status, int) else None


_guards: dict[tuple[S3Location, str], Callable[[], None]] = {}
_guards_lock = threading.Lock()


def commit_guard(loc: S3Location, run_id: str, check: Callable[[], None]) -> Callable[[], None]:
    """``check`` called before every commit record of the run is written in this process (the
    run's lease: it raises when the lease was lost); returns what removes it again."""
    with _guards_lock:
        _guards[(loc, run_id)] = check

    def remove() -> None:
        with _guards_lock:
            if _guards.get((loc, run_id)) is check:
                del _guards[(loc, run_id)]
    return remove


def check_guard(loc: S3Location, run_id: str) -> None:
    """Raise what the run's guard raises (nothing when no guard is set)."""
    with _guards_lock:
        check = _guards.get((loc, run_id))
    if check is not None:
        check()


def put_object(loc: S3Location, key: str, body: bytes, *, if_none_match: bool = False,
               if_match: str | None = None) -> str:
    """One object written (conditionally); its ETag. CommitConflict when the condition fails.
    A transient fault is retried (``warehouse.store_retry``); a retry whose condition fails
    finds whether its earlier try landed after all (the object holds this very body). That
    earlier try may be botocore's own, inside one request: its standard retry mode resends a
    request whose connection broke, so even a first conflict is checked."""

    def once() -> str:
        try:
            return _put_once(loc, key, body, if_none_match, if_match)
        except CommitConflict:
            found = _get_once(loc, key)
            if found is not None and found[0] == body:
                return found[1]
            raise
    return retrying(f"writing {key}", once)


def _put_once(loc: S3Location, key: str, body: bytes, if_none_match: bool,
              if_match: str | None) -> str:
    from botocore.exceptions import ClientError

    options: dict[str, Any] = {}
    if if_none_match:
        options["IfNoneMatch"] = "*"
    if if_match is not None:
        options["IfMatch"] = if_match
    try:
        answer = client().put_object(Bucket=loc.bucket, Key=loc.key(key), Body=body, **options)
    except ClientError as exc:
        if _status(exc) in CONFLICT_STATUS:
            raise CommitConflict(f"{loc}/{key}: changed by another writer") from None
        raise
    return str(answer["ETag"])


def get_object(loc: S3Location, key: str) -> tuple[bytes, str] | None:
    """(content, ETag) of one object, or None when there is none."""
    return retrying(f"reading {key}", lambda: _get_once(loc, key))


def _get_once(loc: S3Location, key: str) -> tuple[bytes, str] | None:
    from botocore.exceptions import ClientError

    try:
        answer = client().get_object(Bucket=loc.bucket, Key=loc.key(key))
    except ClientError as exc:
        if _status(exc) == 404:
            return None
        raise
    return answer["Body"].read(), str(answer["ETag"])


def delete_objects(loc: S3Location, keys: Sequence[str]) -> None:
    def remove(chunk: Sequence[str]) -> None:
        client().delete_objects(Bucket=loc.bucket, Delete={
            "Objects": [{"Key": loc.key(k)} for k in chunk], "Quiet": True})

    for start in range(0, len(keys), 1000):  # the S3 limit of one request
        chunk = keys[start:start + 1000]
        retrying(f"removing {chunk[0]}", partial(remove, chunk))


def list_objects(loc: S3Location, under: str) -> Iterator[tuple[str, datetime]]:
    """(key relative to the prefix, last modified) of every object under ``under`` (the
    listing read whole, then given: a fault mid-way lists again from the start)."""
    base = loc.key("")
    start = f"{base}/" if base else ""

    def listing() -> list[tuple[str, datetime]]:
        pages = client().get_paginator("list_objects_v2").paginate(
            Bucket=loc.bucket, Prefix=loc.key(under))
        return [(str(item["Key"]).removeprefix(start), item["LastModified"])
                for page in pages for item in page.get("Contents", [])]
    yield from retrying(f"listing {under}", listing)


def record_key(run_id: str, name: str) -> str:
    return f"{COMMITS}/run_id={run_id}/{name}.json"


def part_key(table: str, run_id: str, name: str) -> str:
    return f"{table}/run_id={run_id}/{name}"


def _read_record(loc: S3Location, key: str) -> CommitRecord | None:
    """The record at ``key``: a record is never rewritten, so one an earlier command read is
    taken from disk (``warehouse.object_cache``); None when it is gone."""
    kept = on_disk()
    body = kept.get(loc.path(key)) if kept is not None else None
    if body is None:
        found = get_object(loc, key)
        if found is None:  # removed (replaced by a compaction) since it was listed
            return None
        body = found[0]
        if kept is not None:
            kept.put(loc.path(key), body)
    data = json.loads(body)
    return CommitRecord(key, str(data["run_id"]), str(data["kind"]),
                        {t: [str(p) for p in ps] for t, ps in data["parts"].items()},
                        [str(r) for r in data.get("replaces", [])])


def _record_keys(loc: S3Location, runs: Sequence[str] | None) -> list[str]:
    folders = [f"{COMMITS}/"] if runs is None else [f"{COMMITS}/run_id={r}/" for r in runs]
    return sorted(k for folder in folders for k, _ in list_objects(loc, folder)
                  if k.endswith(".json"))


def _read_records(loc: S3Location, keys: Sequence[str]) -> list[CommitRecord]:
    """The records at ``keys`` (those still there), read a few at a time: one GET each."""
    if len(keys) < 2:
        found = [_read_record(loc, k) for k in keys]
    else:
        with ThreadPoolExecutor(min(READERS, len(keys))) as pool:
            found = list(pool.map(lambda k: _read_record(loc, k), keys))
    return [r for r in found if r is not None]


def live_records(loc: S3Location, runs: Sequence[str] | None = None) -> list[CommitRecord]:
    """The commit records no compaction replaced (of ``runs``, or of every run)."""
    records = _read_records(loc, _record_keys(loc, runs))
    replaced = {k for r in records for k in r.replaces}
    return [r for r in records if r.key not in replaced]


def committed_parts(loc: S3Location, runs: Sequence[str] | None = None,
                    records: Sequence[CommitRecord] | None = None) -> dict[str, list[str]]:
    """Every table's committed part keys: what a reader reads."""
    found: dict[str, list[str]] = {name: [] for name in TABLES}
    for record in live_records(loc, runs) if records is None else records:
        for table, parts in record.parts.items():
            found.setdefault(table, []).extend(parts)
    return {table: sorted(parts) for table, parts in found.items()}


def run_ids(loc: S3Location) -> list[str]:
    """Every run id with a live commit record."""
    return sorted({r.run_id for r in live_records(loc)})


def commit_replacement(loc: S3Location, run_id: str, parts: Mapping[str, list[str]],
                       replaces: Sequence[CommitRecord]) -> CommitRecord:
    """One compaction record: ``parts`` visible, the ``replaces`` records not, in one PUT."""
    check_guard(loc, run_id)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    record = CommitRecord(record_key(run_id, f"compact-{stamp}-{uuid.uuid4().hex[:12]}"),
                          run_id, "compaction", {t: list(p) for t, p in parts.items()},
                          sorted(r.key for r in replaces))
    put_object(loc, record.key, record.body(), if_none_match=True)
    return record


def remove_replaced(loc: S3Location, replaced: Sequence[CommitRecord],
                    kept: Mapping[str, list[str]]) -> None:
    """The parts and records a compaction replaced, removed (parts first: a crash between
    leaves records that are replaced anyway)."""
    keep = {p for parts in kept.values() for p in parts}
    delete_objects(loc, sorted({p for r in replaced for ps in r.parts.values() for p in ps}
                               - keep))
    delete_objects(loc, [r.key for r in replaced])


@dataclass(frozen=True)
class Garbage:
    key: str
    why: str
    modified: datetime


def uncommitted(loc: S3Location, older_than: timedelta = timedelta(0)) -> list[Garbage]:
    """Objects no reader reads: parts of a batch whose record never landed (a crash between
    part and commit), and records (with their parts) a compaction replaced. Only those last
    changed more than ``older_than`` ago (a batch being written is not garbage yet)."""
    # Parts first, records after: a batch committed in between is then seen as committed.
    parts = [(k, m) for table in TABLES for k, m in list_objects(loc, f"{table}/run_id=")
             if k.endswith(".parquet")]
    records = _read_records(loc, _record_keys(loc, None))
    replaced = {k for r in records for k in r.replaces}
    live = {p for r in records if r.key not in replaced for ps in r.parts.values() for p in ps}
    modified = dict(list_objects(loc, f"{COMMITS}/"))
    found = [Garbage(k, "no commit record names it", m) for k, m in parts if k not in live]
    found += [Garbage(r.key, "a commit record a compaction replaced", modified[r.key])
              for r in records if r.key in replaced and r.key in modified]
    cutoff = datetime.now(UTC) - older_than
    return sorted((g for g in found if g.modified <= cutoff), key=lambda g: g.key)


def vacuum(loc: S3Location, older_than: timedelta) -> list[Garbage]:
    """The ``uncommitted`` objects older than ``older_than`` removed; what was removed."""
    found = uncommitted(loc, older_than)
    delete_objects(loc, [g.key for g in found])
    return found
