"""Free disk space: checked before a run starts and before each warehouse write.

A full disk stops a run with one line naming the path and the resume command, never with a
traceback, and never leaves a batch half-written (see ``warehouse.writer``). The floor a run
needs to start is ``AGENTSWEEP_MIN_FREE_MB`` (default 64 MB: Prefect's database with its WAL
grows to a few MB, the warehouse by some kB per trial); a write needs its own size plus a
small reserve kept for Prefect's state updates.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

DEFAULT_MIN_FREE_MB = 64.0
WRITE_RESERVE_BYTES = 4 * 1024 * 1024
"""Left free after a warehouse write, for Prefect's own state updates on the same disk."""
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
MB = 1024 * 1024


class DiskFull(OSError):
    """Not enough room at ``path``: the run stops (what was written stays; resume later)."""

    def __init__(self, path: Path, free_bytes: int, needed_bytes: int | None = None) -> None:
        self.path = path
        self.free_bytes = free_bytes
        self.needed_bytes = needed_bytes
        needed = "" if needed_bytes is None else f", {needed_bytes / MB:.1f} MB needed"
        super().__init__(errno.ENOSPC, f"no space left on the disk of {path} "
                                       f"({free_bytes / MB:.1f} MB free{needed})")

    def __str__(self) -> str:
        return str(self.strerror)

    def __reduce__(self) -> tuple[type[DiskFull], tuple[Path, int, int | None]]:
        return DiskFull, (self.path, self.free_bytes, self.needed_bytes)  # crosses Prefect/Ray


def min_free_bytes() -> int:
    """The floor a run needs to start (``AGENTSWEEP_MIN_FREE_MB``)."""
    raw = os.environ.get("AGENTSWEEP_MIN_FREE_MB", "")
    try:
        value = float(raw) if raw.strip() else DEFAULT_MIN_FREE_MB
    except ValueError:
        value = -1.0
    if not value >= 0:  # also NaN
        raise ValueError(f"AGENTSWEEP_MIN_FREE_MB={raw!r}: give a number of MB, 0 or more")
    return int(value * MB)


def existing(path: Path) -> Path:
    """The path, or its nearest ancestor that exists (what will hold it once created)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def free_bytes(path: Path) -> int:
    return shutil.disk_usage(existing(path)).free


def require_free(path: Path, needed_bytes: int) -> None:
    """Raise DiskFull unless ``needed_bytes`` fit on the disk of ``path``."""
    free = free_bytes(path)
    if free < needed_bytes:
        raise DiskFull(path, free, needed_bytes)


def is_no_space(exc: BaseException) -> bool:
    """ENOSPC or EDQUOT anywhere in the exception's chain (SQLite says it in words)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in NO_SPACE_ERRNOS:
            return True
        if "database or disk is full" in str(current):
            return True
        current = current.__cause__ or current.__context__
    return False
