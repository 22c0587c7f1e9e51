"""DuckDB over the Parquet warehouse: in-memory connection, views read the files in place.

On object storage (``warehouse.location``) the views read the committed parts only (those a
commit record names: ``warehouse.objectstore``), through pyarrow's S3 file system registered
with DuckDB; the views and ``.sql`` files are the same."""

from __future__ import annotations

import itertools
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from warehouse.chosen import ATTEMPT_TABLES, TableFiles, split_runs
from warehouse.location import Root, S3Location
from warehouse.object_reads import duckdb_filesystem
from warehouse.objectstore import committed_parts
from warehouse.schema import TABLES
from warehouse.view_plan import needed, plan_views, wanted
from warehouse.writer import WarehouseError, table_dir, validate_run_id


def sql_text(name: str) -> str:
    """The text of ``warehouse/sql/<name>.sql``."""
    return resources.files("warehouse").joinpath("sql", f"{name}.sql").read_text("utf-8")


def _quote(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


class ReadOnlyViolation(ValueError):
    """Ad-hoc SQL that would change, attach, install or export something."""


VIEW_FILES = ("views", "failure_map", "condition_decisions", "judge", "tau2", "trends")
"""The ``.sql`` files that create the views, in order (a later one reads the earlier)."""
VIEWS_SQL = tuple(sql_text(name) for name in VIEW_FILES)
"""Their text, read when this module is imported: a process keeps the views that match the
schema it loaded, even if the files change under a long run (an upgrade mid-sweep)."""
RAW_VIEWS = {name: (f"{name}_all", *((f"{name}_chosen", f"{name}_rest")
                                     if name in ATTEMPT_TABLES else ()))
             for name in TABLES}
"""The views over each table's files: ``_all`` every file; for the tables whose views pick
each trial's chosen attempt, ``_chosen`` the runs that need no pick and ``_rest`` the others
(``warehouse.chosen``)."""
VIEW_PLAN = plan_views(VIEWS_SQL, [raw for names in RAW_VIEWS.values() for raw in names])
"""Their statements, each with the views it reads: a connection creates those its SQL needs."""


def _parquet_in(folder: str) -> list[str]:
    try:
        with os.scandir(folder) as entries:
            return sorted(e.path for e in entries if e.name.endswith(".parquet") and e.is_file())
    except (FileNotFoundError, NotADirectoryError):
        return []


def _run_folders(directory: Path, runs: Sequence[str] | None) -> dict[str, str]:
    if runs is not None:
        return {r: str(directory / f"run_id={r}") for r in runs}
    try:
        with os.scandir(directory) as entries:
            return {e.name.removeprefix("run_id="): e.path for e in entries
                    if e.name.startswith("run_id=") and e.is_dir()}
    except FileNotFoundError:
        return {}


def _local_sources(root: Path, runs: Sequence[str] | None) -> dict[str, TableFiles]:
    """Every table's files to read: a run read as it is by its files, a run whose rows the
    views pick by a glob of its folder (folders with no file left out)."""
    files = {name: {run: _parquet_in(folder)
                    for run, folder in _run_folders(table_dir(root, name), runs).items()}
             for name in TABLES}
    return split_runs(files, lambda table, run, _: [
        str(table_dir(root, table) / f"run_id={run}" / "*.parquet")])


def _object_sources(root: S3Location, runs: Sequence[str] | None) -> dict[str, TableFiles]:
    """Every table's committed parts, as paths DuckDB reads through the registered file
    system (runs that have none simply have no paths)."""
    parts = committed_parts(root, runs)
    files: dict[str, dict[str, list[str]]] = {name: {} for name in TABLES}
    for name in TABLES:
        for key in parts.get(name, []):  # <table>/run_id=<run>/<name>
            run = key.split("/")[1].removeprefix("run_id=")
            files[name].setdefault(run, []).append(root.duckdb_path(key))
    return split_runs(files)


def _allowed_prefix(root: Root) -> str:
    return str(root.resolve()) if isinstance(root, Path) else root.duckdb_path() + "/"


def connect(root: Root, locked: bool = False, runs: Sequence[str] | None = None,
            sources: dict[str, TableFiles] | None = None,
            for_sql: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with views runs, trials, events, checks (and their *_all raw forms).

    ``locked``: for SQL a person types. DuckDB's own settings then hold it inside the warehouse:
    no file outside it, no network, no extension installed or loaded, and the settings locked
    (so SQL cannot lift them); ``run_user_sql`` also refuses any statement but a query.
    ``runs``: only those runs' files are read (a run's own queries never touch, or trip on,
    another run's files). ``sources``: every table's files to read, when the caller has listed
    them already (``_cursor``). ``for_sql``: only the views (and the trends' macros) this SQL
    needs (``warehouse.view_plan``); None: every one."""
    names = wanted(VIEW_PLAN, for_sql)
    con = _database(root)
    _create(con, names, _sources(root, runs, sources), set())
    if locked:
        # DuckDB allows its temp directory too: by default ``.tmp`` in the working directory,
        # where any file would be readable. A fresh private folder of its own instead.
        con.execute(f"SET temp_directory = {_quote(_spill_directory())}")
        for setting in ("SET autoinstall_known_extensions = false",
                        "SET autoload_known_extensions = false",
                        f"SET allowed_directories = [{_quote(_allowed_prefix(root))}]",
                        "SET enable_external_access = false",
                        "SET lock_configuration = true"):
            con.execute(setting)
    return con


_spill: str | None = None


def _spill_directory() -> str:
    """This process's folder for DuckDB to spill a large query of a person's SQL to: made
    empty and private (0700) on first use, removed at exit; nothing else is ever in it."""
    global _spill
    if _spill is None:
        import atexit
        import shutil
        import tempfile

        _spill = tempfile.mkdtemp(prefix="agentsweep-sql-")
        atexit.register(shutil.rmtree, _spill, ignore_errors=True)
    return _spill


def _database(root: Root) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    # The footers are read once per file, not again for each view that binds over them.
    con.execute("SET parquet_metadata_cache = true")
    if isinstance(root, S3Location):
        con.register_filesystem(duckdb_filesystem())
    return con


def _sources(root: Root, runs: Sequence[str] | None,
             sources: dict[str, TableFiles] | None) -> dict[str, TableFiles]:
    if sources is not None:
        return sources
    if isinstance(root, S3Location):
        return _object_sources(root, runs)
    return _local_sources(root, runs)


def _create(con: duckdb.DuckDBPyConnection, names: frozenset[str] | None,
            sources: dict[str, TableFiles], created: set[str]) -> None:
    """Create the raw views (``RAW_VIEWS``) and the views of ``VIEW_PLAN`` that ``names``
    needs (None: all) and ``created`` does not hold yet, and note them there."""
    for name, table in TABLES.items():
        files = sources.get(name, TableFiles())
        for raw, paths in zip(RAW_VIEWS[name], (files.every, files.chosen, files.rest),
                              strict=False):
            if raw in created or (names is not None and raw not in names):
                continue
            empty = f"_{name}_empty"
            if empty not in created:
                # A table, not a registered scan: a cursor of this connection sees it (_cursor).
                con.register("_empty_arrow", table.arrow_schema().empty_table())
                con.execute(f"CREATE TABLE {empty} AS SELECT * FROM _empty_arrow")
                con.unregister("_empty_arrow")
                created.add(empty)
            if paths:  # files of older schema versions lack newer columns: those read as NULL
                listed = ", ".join(_quote(p) for p in paths)
                con.execute(
                    f"CREATE VIEW {raw} AS SELECT * FROM read_parquet([{listed}], "
                    f"union_by_name = true, hive_partitioning = false) "
                    f"UNION ALL BY NAME SELECT * FROM {empty}"
                )
            else:
                con.execute(f"CREATE VIEW {raw} AS SELECT * FROM {empty}")
            created.add(raw)
    for statement in needed(VIEW_PLAN, names):
        key = f"#{statement.index}"
        if key not in created:
            con.execute(statement.text)
            created.add(key)


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]

    def to_arrow(self) -> pa.Table:
        return pa.Table.from_pylist([dict(zip(self.columns, r, strict=True)) for r in self.rows])


RUN_PARAMS = ("run_id", "baseline", "candidate")
"""Parameters that name the runs a query is about: the query then reads only their files."""


@contextmanager
def trusted_connection(root: Root, params: dict[str, Any] | None = None,
                       all_runs: bool = False,
                       for_sql: str | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection for our own SQL (trusted), closed after the block. Scoped to the runs the
    parameters name unless ``all_runs`` (a query that looks across runs, e.g. for a baseline);
    with the views (and the trends' macros) ``for_sql`` needs (None: every one); an unreadable
    file is a WarehouseError naming it."""
    scoped = [str(v) for k, v in (params or {}).items() if k in RUN_PARAMS and v is not None]
    try:
        con, shared = _cursor(root, None if all_runs else scoped or None, for_sql)
        try:
            yield con
        finally:
            con.close()
            with _shared_lock:
                shared.release()
    except (duckdb.IOException, duckdb.InvalidInputException) as exc:
        message = str(exc).strip().splitlines()[0]
        if ".parquet" not in message:
            raise
        raise WarehouseError(f"a warehouse file cannot be read (corrupt?): {message}; "
                             "`agentsweep warehouse check` lists every damaged file") from None


_SHARED_SIZE = 4


@dataclass
class _Shared:
    """A trusted database shared by the blocks that read the same files, and what of the
    views it has created (each block adds what its SQL needs). On disk it is a catalog of the
    process's one trusted database (``catalog``); on object storage a database of its own
    (its file system is registered with it)."""

    con: duckdb.DuckDBPyConnection
    sources: dict[str, TableFiles]
    catalog: str | None = None
    created: set[str] = field(default_factory=set)
    open_cursors: int = 0
    evicted: bool = False

    def extend(self, for_sql: str | None) -> None:
        _create(self.con, wanted(VIEW_PLAN, for_sql), self.sources, self.created)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor of its own for a block (under ``_shared_lock``)."""
        cursor = self.con.cursor()
        if self.catalog is not None:
            cursor.execute(f"USE {self.catalog}")
        self.open_cursors += 1
        return cursor

    def release(self) -> None:
        """A block's cursor closed (under ``_shared_lock``): a catalog evicted meanwhile goes
        once no block reads it."""
        self.open_cursors -= 1
        self._detach_when_unused()

    def evict(self) -> None:
        self.evicted = True
        self._detach_when_unused()

    def _detach_when_unused(self) -> None:
        if self.evicted and self.open_cursors == 0 and self.catalog is not None:
            self.con.close()
            _trusted_database().execute(f"DETACH {self.catalog}")
            self.catalog = None


_shared_connections: OrderedDict[tuple[object, ...], _Shared] = OrderedDict()
_shared_lock = threading.Lock()
_trusted: duckdb.DuckDBPyConnection | None = None
_catalog_numbers = itertools.count()


def clear_shared() -> None:
    """Forget every shared database, detaching its catalog once no block reads it (a
    benchmark that measures cold queries)."""
    with _shared_lock:
        while _shared_connections:
            _shared_connections.popitem(last=False)[1].evict()


def _trusted_database() -> duckdb.DuckDBPyConnection:
    """The process's database for our own SQL over local files (under ``_shared_lock``).
    Each set of files gets an in-memory catalog attached to it (~0.5 ms; a database of its
    own costs ~20 ms to open), and the Parquet footers it has read serve every catalog."""
    global _trusted
    if _trusted is None:
        _trusted = _database(Path("."))
    return _trusted


def _new_shared(root: Root, sources: dict[str, TableFiles]) -> _Shared:
    """An empty database for one set of files."""
    if isinstance(root, S3Location):
        return _Shared(_database(root), sources)
    with _shared_lock:
        catalog = f"files_{next(_catalog_numbers)}"
        trusted = _trusted_database()
        trusted.execute(f"ATTACH ':memory:' AS {catalog}")
        con = trusted.cursor()
    con.execute(f"USE {catalog}")
    return _Shared(con, sources, catalog)


def files_of(root: Root, runs: Sequence[str] | None = None) -> tuple[object, ...]:
    """Every Parquet file ``connect(root, runs=runs)`` would read, with its identity (inode,
    size, change time): equal only when the views would see exactly the same files. On object
    storage the committed parts (a part is never rewritten: its key is its identity)."""
    if isinstance(root, S3Location):
        return _objects_of(root, runs, _object_sources(root, runs))
    found: list[object] = [str(root.resolve()), None if runs is None else tuple(runs)]
    for name in TABLES:
        directory = table_dir(root, name)
        for folder in ["run_id=*"] if runs is None else [f"run_id={r}" for r in runs]:
            for path in sorted(directory.glob(f"{folder}/*.parquet")):
                stat = path.stat()
                found.append((str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns,
                              stat.st_ctime_ns))
    return tuple(found)


def _objects_of(root: S3Location, runs: Sequence[str] | None,
                sources: dict[str, TableFiles]) -> tuple[object, ...]:
    return (str(root), None if runs is None else tuple(runs),
            *((name, p) for name in TABLES for p in sources[name].every))


def _cursor(root: Root, runs: Sequence[str] | None,
            for_sql: str | None = None) -> tuple[duckdb.DuckDBPyConnection, _Shared]:
    """A cursor of the trusted database of these files, built once per set of files and
    shared: its views read the files at each query, and each block gets a cursor of its own
    (threads never share one; ``_Shared.release`` when it closes). A warehouse whose files
    changed gets a new database, so a block sees exactly what a fresh ``connect`` would."""
    sources: dict[str, TableFiles] | None = None
    if isinstance(root, S3Location):  # listed once, for the key and the views alike
        sources = _object_sources(root, runs)
        key = _objects_of(root, runs, sources)
    else:
        key = files_of(root, runs)
    with _shared_lock:
        shared = _shared_connections.get(key)
        if shared is not None:
            _shared_connections.move_to_end(key)
            shared.extend(for_sql)
            return shared.cursor(), shared
    shared = _new_shared(root, _sources(root, runs, sources))
    shared.extend(for_sql)  # views bind (footers read) outside the lock
    with _shared_lock:
        if key in _shared_connections:  # another thread built it meanwhile: use theirs
            shared.evict()
            shared = _shared_connections[key]
            shared.extend(for_sql)
        else:
            _shared_connections[key] = shared
        while len(_shared_connections) > _SHARED_SIZE:  # an open cursor keeps its database
            _shared_connections.popitem(last=False)[1].evict()
        return shared.cursor(), shared


def run_sql(root: Root, sql: str, params: dict[str, Any] | None = None,
            all_runs: bool = False) -> QueryResult:
    """Our own SQL (trusted), on a ``trusted_connection``."""
    with trusted_connection(root, params, all_runs, sql) as con:
        cursor = con.execute(sql, params or {})
        columns = [d[0] for d in cursor.description or []]
        return QueryResult(columns, cursor.fetchall())


def run_named_arrow(root: Root, name: str, params: dict[str, Any] | None = None) -> pa.Table:
    """``run_named`` as one Arrow table: a large result in columns, never a Python object a
    value (a resume's done set of a million trials)."""
    sql = sql_text(name)
    with trusted_connection(root, params, False, sql) as con:
        return con.sql(sql, params=params or {}).to_arrow_table()


QUERY_STATEMENTS = frozenset({"SELECT", "EXPLAIN"})


def run_user_sql(root: Root, sql: str) -> QueryResult:
    """Ad-hoc SQL, read-only: every statement must be a query (DuckDB parses it; a COPY,
    ATTACH, INSTALL, SET, CREATE... is refused before anything runs), on a locked connection."""
    con = connect(root, locked=True, for_sql=sql)
    try:
        statements = con.extract_statements(sql)
        for statement in statements:
            kind = str(statement.type).rsplit(".", 1)[-1]
            if kind not in QUERY_STATEMENTS:
                raise ReadOnlyViolation(f"agentsweep sql runs queries only; {kind} is refused "
                                        "(the warehouse is never changed from here; write a "
                                        "result with --output FILE)")
        if not statements:
            raise ReadOnlyViolation("no SQL statement given")
        result: QueryResult | None = None
        for statement in statements:
            cursor = con.execute(statement)
            result = QueryResult([d[0] for d in cursor.description or []], cursor.fetchall())
        assert result is not None
        return result
    finally:
        con.close()


def run_named(root: Root, name: str, params: dict[str, Any] | None = None,
              all_runs: bool = False) -> QueryResult:
    """``warehouse/sql/<name>.sql`` with its parameters bound (never formatted in)."""
    return run_sql(root, sql_text(name), params, all_runs)


RUNS_HINT = "`agentsweep runs` lists the run ids"
"""Where a person finds the run ids a command takes."""


def unknown_run(root: Root, run_id: str) -> str | None:
    """Why ``run_id`` names no run of the warehouse at ``root`` (not a valid id, or not one row
    of it), as one line ending in where the ids are listed; None when the run is there."""
    try:
        validate_run_id(run_id)
    except WarehouseError as exc:
        return f"{exc} ({RUNS_HINT})"
    if run_named(root, "run_exists", {"run_id": run_id}).rows[0][0]:
        return None
    return f"no run {run_id!r} in the warehouse {root} ({RUNS_HINT})"
