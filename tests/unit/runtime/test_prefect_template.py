"""A new home's Prefect database starts as a copy of one migrated once per machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.runtime import hygiene
from pipeline.runtime.prefect_state import DB_NAME, inspect_database, migration_head
from pipeline.runtime.prefect_template import seed_database, template_path


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("AGENTSWEEP_PREFECT_TEMPLATE_CACHE", str(folder))
    for key in ("PREFECT_API_URL", "PREFECT_API_DATABASE_CONNECTION_URL",
                "PREFECT_SERVER_DATABASE_CONNECTION_URL"):
        monkeypatch.delenv(key, raising=False)
    return folder


@pytest.mark.slow  # runs Prefect's database migrations
def test_a_new_home_gets_a_migrated_database_built_once(tmp_path: Path, cache: Path) -> None:
    head = migration_head()
    assert head is not None
    first, second = tmp_path / "a" / "prefect", tmp_path / "b" / "prefect"
    hygiene.prepare_prefect_home(first)
    state = inspect_database(first / DB_NAME)
    assert state.problem is None and state.revision == head  # nothing left to migrate
    built = template_path(head).stat().st_mtime_ns
    hygiene.prepare_prefect_home(second)
    assert template_path(head).stat().st_mtime_ns == built  # built once, copied twice
    assert inspect_database(second / DB_NAME).revision == head
    assert sorted(p.name for p in cache.iterdir()) == [f"prefect-{head}.db"]  # no leftovers


def test_an_existing_database_is_left_as_it_is(tmp_path: Path, cache: Path) -> None:
    home = tmp_path / "prefect"
    home.mkdir()
    (home / DB_NAME).write_bytes(b"")
    assert seed_database(home) is False
    assert (home / DB_NAME).read_bytes() == b""
    assert not cache.exists()


def test_without_a_usable_cache_prefect_builds_its_own(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("AGENTSWEEP_PREFECT_TEMPLATE_CACHE", str(blocked / "cache"))
    home = tmp_path / "prefect"
    assert seed_database(home) is False
    assert not (home / DB_NAME).exists()


def test_a_home_on_another_prefect_database_is_not_seeded(tmp_path: Path, cache: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    assert seed_database(tmp_path / "prefect") is False
    assert not cache.exists()
