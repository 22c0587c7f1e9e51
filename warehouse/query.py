"""DuckDB over the Parquet warehouse: in-memory connection, views read the files in place."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from warehouse.schema import TABLES
from warehouse.writer import table_dir


def sql_text(name: str) -> str:
    """The text of ``warehouse/sql/<name>.sql``."""
    return resources.files("warehouse").joinpath("sql", f"{name}.sql").read_text("utf-8")


def _quote(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def connect(root: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with views runs, trials, events, checks (and their *_all raw forms)."""
    con = duckdb.connect(":memory:")
    for name, table in TABLES.items():
        directory = table_dir(root, name)
        if any(directory.glob("run_id=*/*.parquet")):
            pattern = _quote(str(directory / "run_id=*" / "*.parquet"))
            con.execute(
                f"CREATE VIEW {name}_all AS SELECT * FROM read_parquet({pattern}, "
                "union_by_name = true, hive_partitioning = false)"
            )
        else:
            con.register(f"_{name}_empty", table.arrow_schema().empty_table())
            con.execute(f"CREATE VIEW {name}_all AS SELECT * FROM _{name}_empty")
    con.execute(sql_text("views"))
    return con


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]

    def to_arrow(self) -> pa.Table:
        return pa.Table.from_pylist([dict(zip(self.columns, r, strict=True)) for r in self.rows])


def run_sql(root: Path, sql: str, params: dict[str, Any] | None = None) -> QueryResult:
    con = connect(root)
    try:
        cursor = con.execute(sql, params or {})
        columns = [d[0] for d in cursor.description or []]
        return QueryResult(columns, cursor.fetchall())
    finally:
        con.close()


def run_named(root: Path, name: str, params: dict[str, Any] | None = None) -> QueryResult:
    return run_sql(root, sql_text(name), params)
