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
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import pyarrow.fs as pafs

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


def store_settings() -> dict[str, str]:
    """The object store's endpoint and region as this process has them (never a credential),
    for another process (a Ray worker or task) that reaches the same store."""
    return {name: value for name, value in (("AWS_ENDPOINT_URL", endpoint_url()),
                                            ("AWS_REGION", region())) if value}


def adopt_store_settings(settings: Mapping[str, str]) -> None:
    """``store_settings`` of another process, where this one's environment has none."""
    for name, value in settings.items():
        os.environ.setdefault(name, value)


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


CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 15.0
"""boto3's waits for a connection and for the next bytes of an answer (its defaults: 60 s
each). Its requests are small (commit records, the lease, listings): an endpoint silent that
long is away, and the request is retried on a new connection within the store's outage bound
(``warehouse.store_retry``) instead of spending the whole bound on one half-dead socket."""


@cache
def _client(endpoint: str | None, region_name: str | None) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=CONNECT_TIMEOUT_S, read_timeout=READ_TIMEOUT_S)
    return boto3.session.Session().client("s3", endpoint_url=endpoint, region_name=region_name,
                                          config=config)


def client() -> Any:
    """A boto3 S3 client for the current AWS settings (thread-safe; one per endpoint/region)."""
    return _client(endpoint_url(), region())
