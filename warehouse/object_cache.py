"""What one command read of the warehouse's immutable objects, kept on disk for the next.

Each ``agentsweep sql`` or ``report`` is a new process. On object storage it would ask, every
time, for each run's commit record (one GET each) and each part's footer (one ranged GET each)
before the first row (docs/performance.md). Both are immutable: a commit record's or a part's
key holds a random id and is never written twice (a compaction writes new keys and deletes the
old; vacuum deletes). So their bytes are kept in a folder (``AGENTSWEEP_HOME/cache/objects``
for the command line, ``pipeline.runtime.hygiene``) under a hash of the endpoint, bucket and
key, and read from there before the bucket is asked. What is live is still listed from the
bucket by every command (``warehouse.objectstore``): a cached record of a replaced run is never
read.

Of a part, its info and footer are kept (its last bytes from the footer's start), or the whole
part when it is that small (a run's ``runs`` rows, say); records hold part keys. No secret is
in either (what is written to the warehouse is redacted first). Entries are written whole (a
temporary file, then a rename): a killed command leaves no half entry. A command that writes
to the folder first trims it to ``BUDGET_BYTES``, the oldest entries first (a part a
compaction deleted is never read again, and a removed entry only costs a request).
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

from warehouse.atomic import atomic_path
from warehouse.location import endpoint_url

BUDGET_BYTES = 512 * 1024 * 1024
"""The folder is trimmed to this size, oldest entries first, by the first write of a process."""


class ObjectCache:
    """Bytes of immutable objects by endpoint, bucket and key, in one folder."""

    def __init__(self, folder: Path, budget_bytes: int = BUDGET_BYTES) -> None:
        self.folder = folder
        self.budget_bytes = budget_bytes
        self._trimmed = False
        self._trimming = threading.Lock()

    def _path(self, path: str) -> Path:
        digest = hashlib.sha256(f"{endpoint_url() or ''}\n{path}".encode()).hexdigest()
        return self.folder / digest[:2] / digest

    def get(self, path: str) -> bytes | None:
        """The kept bytes of ``bucket/key``, or None."""
        try:
            return self._path(path).read_bytes()
        except OSError:
            return None

    def put(self, path: str, data: bytes) -> None:
        """Keep ``data`` for ``bucket/key`` (a cache: a failure to write is ignored)."""
        if not self._trimmed:
            with self._trimming:  # the first write of a process, of whichever thread
                if not self._trimmed:
                    self.trim()
                    self._trimmed = True
        try:
            with atomic_path(self._path(path), durable=False) as temporary:
                temporary.write_bytes(data)
        except OSError:
            return

    def trim(self) -> None:
        """The oldest entries removed until the folder holds at most ``budget_bytes``."""
        entries: list[tuple[float, int, str]] = []
        try:
            for shard in os.scandir(self.folder):
                if shard.is_dir():
                    for entry in os.scandir(shard.path):
                        found = entry.stat()
                        entries.append((found.st_mtime, found.st_size, entry.path))
        except OSError:
            return
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.budget_bytes:
                break
            try:
                os.unlink(path)
            except OSError:
                continue
            total -= size


_kept: ObjectCache | None = None


def keep_on_disk(folder: Path | None) -> None:
    """Keep the objects' bytes in ``folder`` from now on in this process (None: do not); asked
    again for the same folder, the same cache stays (it has trimmed the folder once already)."""
    global _kept
    if folder is None:
        _kept = None
    elif _kept is None or _kept.folder != folder:
        _kept = ObjectCache(folder)


def on_disk() -> ObjectCache | None:
    """The folder objects are kept in, if any."""
    return _kept
