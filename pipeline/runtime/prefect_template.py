"""A migrated, empty Prefect database, built once per machine and copied into each new home.

Prefect's API migrates a fresh SQLite database on its first start, seconds of CPU in every run
on a new ``AGENTSWEEP_HOME`` (a CI job, a test, a first run; docs/performance.md). The template
is that database migrated once, in a process of its own, for the installed Prefect's newest
migration (``prefect_state.migration_head``); a home without a database gets a copy before
Prefect starts, and Prefect finds nothing left to migrate.

Cache: ``AGENTSWEEP_PREFECT_TEMPLATE_CACHE``, else ``$XDG_CACHE_HOME/agentsweep/prefect``
(default ``~/.cache/agentsweep/prefect``), one file per migration head. The template holds no
flow run and no setting; only Prefect's schema. When anything about it fails (no cache folder,
a full disk, a Prefect that cannot migrate here) Prefect builds its own database.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from pipeline.runtime.prefect_state import (
    inspect_database,
    migration_head,
    own_database,
    settle_database,
)
from warehouse.atomic import atomic_path

BUILD_TIMEOUT_S = 120.0


def template_folder() -> Path:
    if folder := os.environ.get("AGENTSWEEP_PREFECT_TEMPLATE_CACHE"):
        return Path(folder)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "agentsweep" / "prefect"


def template_path(head: str) -> Path:
    return template_folder() / f"prefect-{head}.db"


def seed_database(home: Path) -> bool:
    """Copy the template into ``home`` when this process's Prefect API will create its database
    there and none exists yet; True if it did. Never raises: Prefect migrates as before."""
    db = own_database(home)
    if db is None or db.exists():  # the common case: no migration files to read
        return False
    head = migration_head()
    if head is None:
        return False
    template = ensure_template(head)
    if template is None:
        return False
    return _copy_into(template, db)


def ensure_template(head: str) -> Path | None:
    """The template for ``head``, built now if missing; None when it cannot be had."""
    path = template_path(head)
    if _is_template(path, head):
        return path
    try:
        with atomic_path(path) as built:  # a concurrent builder's file is as good as this one
            try:
                with tempfile.TemporaryDirectory(prefix="agentsweep-prefect-") as scratch:
                    subprocess.run([sys.executable, "-m", __name__], check=True,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, timeout=BUILD_TIMEOUT_S,
                                   env=_build_env(built, Path(scratch)))
                settle_database(built)
            finally:
                for suffix in ("-wal", "-shm", "-journal"):
                    built.with_name(built.name + suffix).unlink(missing_ok=True)
            if not _is_template(built, head):
                raise OSError(f"Prefect's migrations did not reach {head}")
    except (OSError, sqlite3.Error, subprocess.SubprocessError):
        return None
    return path


def _is_template(path: Path, head: str) -> bool:
    if not path.is_file():
        return False
    state = inspect_database(path)
    return state.problem is None and state.revision == head


def _copy_into(template: Path, db: Path) -> bool:
    try:
        with atomic_path(db) as partial:
            shutil.copyfile(template, partial)
    except OSError:  # a full disk: Prefect creates and migrates its own
        return False
    return True


def _build_env(db: Path, scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(scratch),
               PREFECT_API_DATABASE_CONNECTION_URL=f"sqlite+aiosqlite:///{db}",
               PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_LOGGING_LEVEL="ERROR")
    return env


def _build() -> None:
    """Run Prefect's migrations on the database its settings name (in a process of its own:
    Prefect reads its database URL once, at import)."""
    import asyncio

    from prefect.server.database import provide_database_interface

    asyncio.run(provide_database_interface().create_db())


if __name__ == "__main__":
    _build()
