"""Atomic file writes: a reader (or a crash) sees the old file or the whole new one, never half.

Every write that replaces a file goes through here (warehouse parts, exported results, reports,
the stack and Prefect-state markers, assembled model weights). The new content is written to a
temporary file in the target's own folder (so the rename never crosses a file system), flushed
to disk with ``fsync``, and renamed over the target with ``os.replace``; the folder is synced
too, so the rename itself survives a power cut. Any failure on the way (a full disk, an
exception in the caller's code, Ctrl-C) removes the temporary file and leaves the target as it
was. A SIGKILL mid-write can leave a ``.<name>.<random>.tmp`` file beside the target, never a
half-written target. ``exclusive`` is the one blocking file lock (a run's landed steps, a
weights download).

Stability: public within agentsweep (``warehouse``, ``pipeline``, ``reports`` and ``flows`` use
it); it imports nothing of them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import fcntl
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


def temporary_name(path: Path) -> Path:
    """A fresh temporary name beside ``path``: hidden, and never matching ``*.parquet`` or any
    other suffix a reader globs for."""
    return path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")


def fsync_file(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (best effort: some file systems refuse it)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def atomic_path(path: Path, durable: bool = True) -> Iterator[Path]:
    """A temporary path beside ``path`` for a writer that opens files itself (pyarrow, a
    download joined block by block); on success it is synced and renamed to ``path``
    (``durable=False``: renamed, not synced; for a cache, which a lost entry only slows).

    The body must create the file; nothing exists at the yielded path when it starts. The file
    gets ``open()``'s permissions (0666 less the umask): a report or an export is for everyone
    who reads the runs, not ``mkstemp``'s 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_name(path)
    try:
        yield tmp
        if durable:
            fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)


@contextmanager
def atomic_text(path: Path, encoding: str = "utf-8", newline: str | None = None
                ) -> Iterator[IO[str]]:
    """An open text file that replaces ``path`` when the block ends without an error."""
    with atomic_path(path) as tmp, open(tmp, "x", encoding=encoding, newline=newline) as handle:
        yield handle


def write_text(path: Path, text: str, encoding: str = "utf-8") -> None:
    """Replace ``path`` with ``text``, atomically."""
    with atomic_text(path, encoding) as handle:
        handle.write(text)


def swap_folder(staged: Path, target: Path, aside: Path) -> None:
    """``staged`` (a finished folder beside ``target``) in the place of ``target``; the old
    folder is moved to ``aside`` (the caller removes it), and put back if the new one cannot
    take its place. Two renames on one file system: a crash between them leaves the old
    folder at ``aside``, never a half-written ``target``."""
    os.replace(target, aside)
    try:
        os.replace(staged, target)
    except OSError:
        os.replace(aside, target)
        raise
    fsync_dir(target.parent)


class NoAtomicExchange(OSError):
    """The system or file system cannot exchange two folders in one step."""


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange_folders(a: Path, b: Path) -> None:
    """Swap two folders on one file system in one atomic step (Linux
    ``renameat2(RENAME_EXCHANGE)``): a reader listing either path sees the one folder or the
    other, never neither. ``NoAtomicExchange`` where the system cannot."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        raise NoAtomicExchange(errno.ENOSYS, "no renameat2 on this system (Linux only)", str(b))
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise NoAtomicExchange(code, "the file system cannot exchange two folders", str(b))
        raise OSError(code, os.strerror(code), str(b))
    fsync_dir(b.parent)


def move_file(path: Path, target: Path) -> None:
    """A finished file moved to ``target`` on the same file system (one rename)."""
    os.replace(path, target)
    fsync_dir(target.parent)


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """The block runs while this process holds ``path``'s exclusive ``flock`` (a second holder
    waits; the kernel gives it back when the holder dies). The file is made if missing and
    never removed: removing it would let two processes lock two different files."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
