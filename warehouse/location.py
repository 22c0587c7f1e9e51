"""Where the warehouse lives: a local folder (as always) or a prefix of an S3 bucket.

``AGENTSWEEP_WAREHOUSE=s3://bucket/prefix`` (or a spec's ``warehouse:``) names object storage;
anything else is a folder. The endpoint, region and credentials of object storage are the
standard AWS ones (``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_S3``, ``AWS_REGION`` /
``AWS_DEFAULT_REGION``, ``AWS_ACCESS_KEY_ID``... or ``~/.aws``): read by the AWS libraries
themselves when a client is made, never stored by us, never printed (an ``S3Location`` holds
the bucket and prefix only).

Files are written through pyarrow's S3 file system; DuckDB reads them through the same file
system, registered with it as an fsspec file system under the protocol ``PROTOCOL`` (its httpfs
extension cannot be loaded here, and the views and ``.sql`` files stay as they are: only the
paths in ``read_parquet`` differ). Conditional writes (commit records, the run lease) go
through boto3, which pyarrow's file system cannot do.

Stability: public within agentsweep; it imports nothing of ours.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import pyarrow.fs as pafs
    from fsspec.implementations.arrow import ArrowFSWrapper

PROTOCOL = "agentsweep-s3"
"""The protocol DuckDB reads warehouse objects under (``agentsweep-s3://bucket/key``)."""
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


class LocationError(ValueError):
    """A warehouse location that names no usable folder or bucket."""


@dataclass(frozen=True)
class S3Location:
    """A warehouse under ``s3://bucket/prefix`` (prefix without slashes at either end)."""

    bucket: str
    prefix: str = ""

    def key(self, *parts: str) -> str:
        """The object key of ``parts`` under the prefix."""
        return "/".join(p for p in (self.prefix, *parts) if p)

    def path(self, *parts: str) -> str:
        """``bucket/key``: the path pyarrow's S3 file system takes."""
        return f"{self.bucket}/{self.key(*parts)}"

    def duckdb_path(self, *parts: str) -> str:
        """The path DuckDB reads through the registered file system."""
        return f"{PROTOCOL}://{self.path(*parts)}"

    def __str__(self) -> str:
        return f"s3://{self.path()}".rstrip("/")


Root = Path | S3Location
"""A warehouse root: a folder, or a prefix in a bucket."""


def parse_location(text: str | Path) -> Root:
    """``s3://bucket/prefix`` as an S3Location, anything else as a folder."""
    if isinstance(text, Path) or not text.startswith("s3://"):
        return Path(text)
    parts = urlsplit(text)
    bucket, prefix = parts.netloc, parts.path.strip("/")
    if not _BUCKET.fullmatch(bucket) or parts.query or parts.fragment:
        raise LocationError(f"{text!r}: give the warehouse on object storage as "
                            "s3://bucket/prefix (a valid bucket name, no query)")
    if any(p in ("", ".", "..") for p in prefix.split("/")) and prefix:
        raise LocationError(f"{text!r}: the prefix has an empty, '.' or '..' part")
    return S3Location(bucket, prefix)


def endpoint_url() -> str | None:
    """The S3 endpoint from the standard AWS variables (None: the AWS default)."""
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def region() -> str | None:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None


@cache
def _filesystem(endpoint: str | None, region_name: str | None) -> pafs.S3FileSystem:
    import pyarrow.fs as pafs

    options: dict[str, Any] = {}
    if endpoint is not None:
        url = urlsplit(endpoint)
        options["endpoint_override"] = url.netloc + url.path.rstrip("/")
        options["scheme"] = url.scheme or "https"
        options["force_virtual_addressing"] = False
    if region_name is not None:
        options["region"] = region_name
    # Credentials: the AWS SDK's own chain (environment, ~/.aws), never passed through us.
    return pafs.S3FileSystem(**options)


def filesystem() -> pafs.S3FileSystem:
    """pyarrow's S3 file system for the current AWS settings (one per endpoint and region)."""
    return _filesystem(endpoint_url(), region())


@cache
def _client(endpoint: str | None, region_name: str | None) -> Any:
    import boto3

    return boto3.session.Session().client("s3", endpoint_url=endpoint, region_name=region_name)


def client() -> Any:
    """A boto3 S3 client for the current AWS settings (thread-safe; one per endpoint/region)."""
    return _client(endpoint_url(), region())


@cache
def _wrapper() -> type[ArrowFSWrapper]:
    from fsspec.implementations.arrow import ArrowFSWrapper

    class WarehouseFS(ArrowFSWrapper):  # type: ignore[misc]
        """pyarrow's S3 file system as fsspec, under ``PROTOCOL`` (paths ``bucket/key``)."""

        protocol = PROTOCOL

        @classmethod
        def _strip_protocol(cls, path: Any) -> Any:
            return str(path).removeprefix(f"{PROTOCOL}://")

        def _open(self, path: str, mode: str = "rb", block_size: int | None = None,
                  seekable: bool = True, **kwargs: Any) -> Any:
            if mode == "rb" and seekable:
                return PositionalFile(self.fs.open_input_file(path), path)
            return super()._open(path, mode, block_size, seekable, **kwargs)

    return WarehouseFS


class PositionalFile:
    """A file read by DuckDB through fsspec, safe for its reading threads.

    DuckDB reads one Parquet file from several threads through the same file object, each
    read as ``seek(offset)`` then ``read(n)``; pyarrow releases the interpreter lock while it
    reads, so with one shared position another thread's seek lands in between and a read
    returns bytes from elsewhere in the file (DuckDB then fails with "don't know what type",
    or worse, decodes the wrong bytes). Here each thread has its own position and every read
    is pyarrow's ``read_at`` (a ranged read, thread-safe), so no thread moves another's."""

    def __init__(self, source: Any, path: str) -> None:
        self._source = source
        self._size: int = source.size()
        self._position = threading.local()
        self.path = path
        self.mode = "rb"

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
        data = bytes(self._source.read_at(count, at))  # bytes in pyarrow 26, a Buffer before
        self._position.at = at + len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(memoryview(buffer)))
        memoryview(buffer)[:len(data)] = data
        return len(data)

    @property
    def size(self) -> int:
        return self._size

    @property
    def closed(self) -> bool:
        return bool(self._source.closed)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        self._source.close()

    def __enter__(self) -> PositionalFile:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()


def duckdb_filesystem() -> ArrowFSWrapper:
    """The S3 file system as fsspec, for ``DuckDBPyConnection.register_filesystem``."""
    return _wrapper()(filesystem())
