"""How DuckDB reads the warehouse's Parquet objects on S3: through fsspec over pyarrow's S3 file
system, with what an immutable object allows.

A part's key is its identity: a part is never rewritten (a compaction writes new keys, vacuum
deletes), so what one read learned about it holds for the process's life. DuckDB asks a lot
per file: ``exists``, ``info`` twice (size, modification time) and an open, each a HEAD request,
then the footer (twice when a view binds and a query scans), all before its first column
chunk (docs/performance.md). Here each object's info is asked once per
process, and its last ``TAIL_BYTES`` (the footer, in our files) fetched once and kept in a
bounded cache; only the column chunks a query reads are requested each time.

DuckDB also reads one file from several threads through the same file object, each read a
``seek`` then a ``read``: each thread keeps its own position and every read is a ranged
``read_at``, so no thread moves another's (one shared position would hand a thread bytes from
where another thread sought).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any

from warehouse.location import PROTOCOL, client, filesystem
from warehouse.object_cache import on_disk

if TYPE_CHECKING:
    from fsspec.implementations.arrow import ArrowFSWrapper

TAIL_BYTES = 64 * 1024
"""The end of an object fetched in one request and kept: a Parquet footer and its length."""
TAIL_BUDGET_BYTES = 64 * 1024 * 1024
"""At most this many bytes of tails are kept (least recently used go first)."""
CACHED_SUFFIX = ".parquet"
"""Only the warehouse's parts are taken as immutable (a lease object is rewritten in place)."""


class ObjectFacts:
    """What this process learned about immutable objects: their info, and their tails."""

    def __init__(self, budget_bytes: int = TAIL_BUDGET_BYTES) -> None:
        self._lock = threading.Lock()
        self._infos: dict[str, dict[str, Any]] = {}
        self._tails: OrderedDict[str, tuple[int, bytes]] = OrderedDict()
        self._tail_bytes = 0
        self._budget = budget_bytes

    def info(self, path: str) -> dict[str, Any] | None:
        with self._lock:
            return self._infos.get(path)

    def remember_info(self, path: str, info: dict[str, Any]) -> None:
        if path.endswith(CACHED_SUFFIX) and info.get("type") == "file":
            with self._lock:
                self._infos[path] = info

    def tail(self, path: str) -> tuple[int, bytes] | None:
        """(offset of the first byte kept, the bytes to the object's end), or None."""
        with self._lock:
            found = self._tails.get(path)
            if found is not None:
                self._tails.move_to_end(path)
            return found

    def remember_tail(self, path: str, start: int, data: bytes) -> None:
        if not path.endswith(CACHED_SUFFIX):
            return
        with self._lock:
            if path in self._tails:
                return
            self._tails[path] = (start, data)
            self._tail_bytes += len(data)
            while self._tail_bytes > self._budget and self._tails:
                _, (_, dropped) = self._tails.popitem(last=False)
                self._tail_bytes -= len(dropped)

    def forget(self) -> None:
        with self._lock:
            self._infos.clear()
            self._tails.clear()
            self._tail_bytes = 0


FACTS = ObjectFacts()
"""The process's facts about the objects it read (``forget`` drops them)."""


class PositionalFile:
    """An object as DuckDB reads it through fsspec: a position per thread, ranged reads, the
    tail from ``FACTS``, and the object opened (a HEAD request) only when a read needs it."""

    def __init__(self, opener: Callable[[], Any], path: str, size: int,
                 facts: ObjectFacts = FACTS) -> None:
        self._opener = opener
        self._source: Any = None
        self._opening = threading.Lock()
        self._size = size
        self._facts = facts
        self._position = threading.local()
        self.path = path
        self.mode = "rb"

    def _opened(self) -> Any:
        with self._opening:
            if self._source is None:
                self._source = self._opener()
            return self._source

    def _at(self) -> int:
        return int(getattr(self._position, "at", 0))

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._at(), 2: self._size}[whence]
        at = max(0, base + offset)
        self._position.at = at
        return at

    def tell(self) -> int:
        return self._at()

    def read(self, size: int = -1) -> bytes:
        at = self._at()
        count = self._size - at if size is None or size < 0 else min(size, self._size - at)
        if count <= 0:
            return b""
        data = self._read_at(at, count)
        self._position.at = at + len(data)
        return data

    def _read_at(self, at: int, count: int) -> bytes:
        tail = self._facts.tail(self.path)
        if tail is None and at + count > self._size - TAIL_BYTES:
            start = max(0, self._size - TAIL_BYTES)
            tail = (start, bytes(self._opened().read_at(self._size - start, start)))
            self._facts.remember_tail(self.path, *tail)
        if tail is not None and at >= tail[0]:
            return tail[1][at - tail[0]:at - tail[0] + count]
        return bytes(self._opened().read_at(count, at))  # bytes in pyarrow 26, a Buffer before

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(memoryview(buffer)))
        memoryview(buffer)[:len(data)] = data
        return len(data)

    @property
    def size(self) -> int:
        return self._size

    @property
    def closed(self) -> bool:
        return self._source is not None and bool(self._source.closed)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        if self._source is not None:
            self._source.close()

    def __enter__(self) -> PositionalFile:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()


class RangedObject:
    """Ranged GETs of one object by key: no HEAD first (pyarrow's ``open_input_file`` asks
    for the size it is then told again)."""

    def __init__(self, path: str) -> None:
        self._bucket, self._key = path.split("/", 1)
        self._client = client()
        self.closed = False

    def read_at(self, count: int, at: int) -> bytes:
        reply = self._client.get_object(Bucket=self._bucket, Key=self._key,
                                        Range=f"bytes={at}-{at + count - 1}")
        return bytes(reply["Body"].read())

    def close(self) -> None:
        self.closed = True


def _footer(data: bytes, whole: bool) -> bytes:
    """The end of a Parquet file from its footer's start (``data``: its last bytes), or all of
    ``data`` when it is the ``whole`` file (a small one: its rows cost no request again) or
    does not end as a Parquet file does."""
    if not whole and len(data) >= 8 and data[-4:] == b"PAR1":
        keep = int.from_bytes(data[-8:-4], "little") + 8
        if keep <= len(data):
            return data[-keep:]
    return data


def _kept_on_disk(path: str) -> dict[str, Any] | None:
    """A part's info and footer as an earlier command kept them (``warehouse.object_cache``),
    now in ``FACTS`` too; None when none was kept."""
    kept = on_disk()
    entry = kept.get(path) if kept is not None else None
    if entry is None:
        return None
    head, _, tail = entry.partition(b"\n")
    facts = json.loads(head)
    mtime = datetime.fromisoformat(facts["mtime"]) if facts.get("mtime") else None
    info = {"name": path, "size": int(facts["size"]), "type": "file", "mtime": mtime}
    FACTS.remember_info(path, info)
    FACTS.remember_tail(path, int(facts["size"]) - len(tail), tail)
    return info


def _keep_on_disk(path: str, size: int, mtime: datetime | None, tail: bytes) -> None:
    kept = on_disk()
    if kept is not None:
        head = {"size": size, "mtime": None if mtime is None else mtime.isoformat()}
        kept.put(path, json.dumps(head).encode() + b"\n" + _footer(tail, len(tail) == size))


def _info_with_tail(path: str) -> dict[str, Any] | None:
    """A part's info and its tail in one request (a suffix range answers with the object's
    size in ``Content-Range``), both kept in ``FACTS`` (and on disk, if asked); None when the
    object answers no suffix range (an empty one), FileNotFoundError when there is none."""
    from botocore.exceptions import ClientError

    known = _kept_on_disk(path)
    if known is not None:
        return known
    bucket, key = path.split("/", 1)
    try:
        reply = client().get_object(Bucket=bucket, Key=key, Range=f"bytes=-{TAIL_BYTES}")
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in ("NoSuchKey", "404"):
            raise FileNotFoundError(path) from None
        if code == "InvalidRange":
            return None
        raise
    span, _, total = str(reply.get("ContentRange", "")).partition("/")
    data = bytes(reply["Body"].read())
    size = int(total) if total.isdigit() else len(data)
    info = {"name": path, "size": size, "type": "file", "mtime": reply.get("LastModified")}
    FACTS.remember_info(path, info)
    FACTS.remember_tail(path, size - len(data), data)
    _keep_on_disk(path, size, info["mtime"], data)
    return info


@cache
def reader_class() -> type[ArrowFSWrapper]:
    """pyarrow's S3 file system as fsspec, under ``PROTOCOL`` (paths ``bucket/key``), that
    DuckDB reads the parts through."""
    from fsspec.implementations.arrow import ArrowFSWrapper

    class WarehouseFS(ArrowFSWrapper):  # type: ignore[misc]
        protocol = PROTOCOL

        @classmethod
        def _strip_protocol(cls, path: Any) -> Any:
            return str(path).removeprefix(f"{PROTOCOL}://")

        def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
            path = self._strip_protocol(path)
            known = FACTS.info(path)
            if known is None and path.endswith(CACHED_SUFFIX):
                known = _info_with_tail(path)
            if known is None:
                known = super().info(path, **kwargs)
                FACTS.remember_info(path, known)
            return dict(known)

        def modified(self, path: str) -> Any:
            return self.info(path)["mtime"]

        def exists(self, path: str, **kwargs: Any) -> bool:
            if FACTS.info(self._strip_protocol(path)) is not None:
                return True
            return bool(super().exists(path, **kwargs))

        def _open(self, path: str, mode: str = "rb", block_size: int | None = None,
                  seekable: bool = True, **kwargs: Any) -> Any:
            if mode == "rb" and seekable:
                size = int(self.info(path)["size"])
                return PositionalFile(lambda: RangedObject(path), path, size)
            return super()._open(path, mode, block_size, seekable, **kwargs)

    return WarehouseFS


def duckdb_filesystem() -> ArrowFSWrapper:
    """The S3 file system as fsspec, for ``DuckDBPyConnection.register_filesystem``."""
    return reader_class()(filesystem())
