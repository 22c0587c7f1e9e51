"""The one atomic-write helper: the old file or the whole new one, never half, no temp left."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from warehouse import atomic
from warehouse.atomic import atomic_path, atomic_text, write_text


class Boom(Exception):
    pass


def test_write_text_replaces_the_file_and_leaves_nothing_else(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "report.csv"
    write_text(target, "old\n")
    write_text(target, "new\n")
    assert target.read_text("utf-8") == "new\n"
    assert list(target.parent.iterdir()) == [target]


def test_a_failure_mid_write_keeps_the_old_file_and_removes_the_temp(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_text("old", "utf-8")
    with pytest.raises(Boom), atomic_text(target) as handle:
        handle.write("half of the new")
        handle.flush()
        seen = [p.name for p in tmp_path.iterdir() if p != target]
        assert len(seen) == 1 and seen[0].startswith(".state.json.") and seen[0].endswith(".tmp")
        raise Boom
    assert target.read_text("utf-8") == "old"
    assert list(tmp_path.iterdir()) == [target]


def test_a_full_disk_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "part.parquet"
    target.write_bytes(b"old")

    def no_space(_: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic, "fsync_file", no_space)  # the data never reached the disk
    with pytest.raises(OSError) as caught, atomic_path(target) as tmp:
        tmp.write_bytes(b"new")
    assert caught.value.errno == errno.ENOSPC
    assert target.read_bytes() == b"old"
    assert list(tmp_path.iterdir()) == [target]


def test_a_failed_rename_keeps_the_old_file(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "stack.json"
    target.write_text("old", "utf-8")

    def refuse(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        raise PermissionError(errno.EACCES, "refused")

    monkeypatch.setattr(atomic.os, "replace", refuse)
    with pytest.raises(PermissionError):
        write_text(target, "new")
    assert target.read_text("utf-8") == "old"
    assert list(tmp_path.iterdir()) == [target]


def test_the_path_variant_is_for_writers_that_open_the_file_themselves(tmp_path: Path) -> None:
    target = tmp_path / "model.gguf"
    with atomic_path(target) as tmp:
        assert tmp.parent == tmp_path and not tmp.exists()
        tmp.write_bytes(b"weights")
        assert not target.exists()  # nothing at the target until the block ends
    assert target.read_bytes() == b"weights"
    assert list(tmp_path.iterdir()) == [target]


def test_new_files_get_the_usual_permissions_not_mkstemps(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_text(tmp_path / "report.csv", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "report.csv").stat().st_mode & 0o777 == 0o644
