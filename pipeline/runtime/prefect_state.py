"""Prefect's own database: a broken one is found before a flow starts, set aside and rebuilt.

A disk that fills while Prefect migrates its SQLite database can leave it half-migrated: the
schema is ahead of the revision Alembic recorded, every later start re-runs a migration that
fails ("duplicate column name") and the ephemeral API times out minutes later. So before a
flow starts (and only when this process starts Prefect's API itself, on its default SQLite
database), the database is checked:

- it passes SQLite's ``quick_check`` and records a migration revision;
- the revision is Prefect's newest (its migrations ran to the end), or the database is exactly
  as the last good run left it (same revision, same schema: an older Prefect's clean database,
  which Prefect then migrates).

A database that fails is moved into ``<PREFECT_HOME>/broken-<time>/`` (nothing is deleted) and
Prefect builds a fresh one. Prefect's database holds flow-run history only; the warehouse,
where every result lives, is not touched. After each successful flow the marker
``agentsweep-prefect.json`` records the revision and schema digest of the good database.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pipeline.runtime import prefect_api
from pipeline.runtime.prefect_api import API_FACTORY, EPHEMERAL_MARK
from warehouse.atomic import write_text

DB_NAME = "prefect.db"
MARKER_NAME = "agentsweep-prefect.json"
_REVISION = re.compile(r'^revision\s*=\s*["\']([0-9a-f]+)["\']', re.MULTILINE)
_DOWN = re.compile(r'^down_revision\s*=\s*["\']([0-9a-f]+)["\']', re.MULTILINE)


@dataclass(frozen=True)
class DatabaseState:
    revision: str | None
    schema_sha256: str
    problem: str | None  # None: the database looks sound


def own_database(home: Path) -> Path | None:
    """The SQLite file this process's ephemeral Prefect API will open (or opened: the run's
    own, pipeline.runtime.prefect_api), or None when Prefect runs elsewhere (an API URL, a
    database URL of its own)."""
    run_api = prefect_api.current()
    url = os.environ.get("PREFECT_API_URL")
    if (url and (run_api is None or url != run_api.url)) or os.environ.get(
            "PREFECT_API_DATABASE_CONNECTION_URL") or os.environ.get(
            "PREFECT_SERVER_DATABASE_CONNECTION_URL"):
        return None
    return home / DB_NAME


def migration_head() -> str | None:
    """Prefect's newest SQLite migration, read from its migration files (no Prefect import)."""
    spec = importlib.util.find_spec("prefect")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "server/database/_migrations/versions/sqlite"
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in folder.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        if (found := _REVISION.search(text)) is not None:
            revisions.add(found.group(1))
        parents.update(_DOWN.findall(text))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def inspect_database(db: Path) -> DatabaseState:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            check = conn.execute("PRAGMA quick_check").fetchone()
            schema = conn.execute(
                "SELECT type, name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name"
            ).fetchall()
            digest = hashlib.sha256(json.dumps(schema).encode()).hexdigest()
            if check is None or check[0] != "ok":
                return DatabaseState(None, digest, f"SQLite integrity check: {check}")
            try:
                rows = conn.execute("SELECT version_num FROM alembic_version").fetchall()
            except sqlite3.OperationalError:
                return DatabaseState(None, digest, "no migration revision recorded")
    except sqlite3.DatabaseError as exc:
        return DatabaseState(None, "", f"unreadable ({exc})")
    if len(rows) != 1:
        return DatabaseState(None, digest, f"{len(rows)} migration revisions recorded")
    return DatabaseState(str(rows[0][0]), digest, None)


def settle_database(db: Path) -> None:
    """Fold the write-ahead log into the file itself (one file to copy)."""
    with sqlite3.connect(db, timeout=5) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")


def _marker(home: Path) -> dict[str, str]:
    try:
        value = json.loads((home / MARKER_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def diagnose(home: Path) -> str | None:
    """Why the database under ``home`` must not be started on, or None if it may be."""
    db = own_database(home)
    if db is None or not db.exists():
        return None
    state = inspect_database(db)
    if state.problem is not None:
        return state.problem
    head = migration_head()
    if head is None or state.revision == head:
        return None
    marker = _marker(home)
    if marker.get("revision") == state.revision and marker.get("schema_sha256") == \
            state.schema_sha256:
        return None  # exactly as the last good run left it: Prefect migrates it forward
    return (f"migration revision {state.revision}, not Prefect's newest ({head}), and its schema "
            "is not the one the last good run left: a migration stopped half-way")


def set_aside_if_broken(home: Path) -> tuple[str, Path] | None:
    """Move a broken database (and its WAL) aside; (why, where it went) if one was."""
    problem = diagnose(home)
    if problem is None:
        return None
    folder = home / f"broken-{datetime.now(UTC):%Y%m%dT%H%M%S%f}"
    folder.mkdir()
    for suffix in ("", "-wal", "-shm", "-journal"):
        path = home / f"{DB_NAME}{suffix}"
        if path.exists():
            path.rename(folder / path.name)
    (home / MARKER_NAME).unlink(missing_ok=True)
    return problem, folder


def mark_good(home: Path) -> None:
    """After a successful flow: record the database's revision and schema digest."""
    db = own_database(home)
    if db is None or not db.exists():
        return
    state = inspect_database(db)
    if state.problem is not None or state.revision is None:
        return
    try:
        write_text(home / MARKER_NAME, json.dumps({"revision": state.revision,
                                                   "schema_sha256": state.schema_sha256}))
    except OSError:  # a full disk: the marker is a convenience, the run's results are saved
        pass



def stop_orphaned_apis(home: Path, grace_s: float = 5.0) -> list[int]:
    """Stop ephemeral Prefect APIs on this home's database whose driver is gone; their pids.

    A driver killed with SIGKILL cannot stop the ephemeral API it started: the API lives on
    (reparented to init), holding the database and ~200 MB, one more per killed run. An
    ephemeral API is an orphan when its parent is init (pid 1); one a live driver runs has that
    driver as its parent. Servers a person started (``prefect server start``, ``agentsweep
    up``) are not ephemeral and are never touched."""
    db = own_database(home)
    if db is None or not db.exists():
        return []
    target = db.resolve()
    stopped = []
    for pid in _api_processes():
        if _parent(pid) == 1 and _ephemeral(pid) and _holds(pid, target):
            _stop(pid, grace_s)
            stopped.append(pid)
    return stopped


def _api_processes() -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if API_FACTORY.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:  # gone meanwhile, or not ours to read
                continue
    return found


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # after "pid (comm) state": the ppid


def _ephemeral(pid: int) -> bool:
    try:
        return EPHEMERAL_MARK in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def _holds(pid: int, path: Path) -> bool:
    try:
        links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
    except OSError:
        return False
    return str(path) in links


def _stop(pid: int, grace_s: float) -> None:
    import signal
    import time

    try:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # init reaps it
        if Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
