"""Named queries as polars DataFrames, for code that works on a result as a table (reports).

DuckDB hands its result to polars through Arrow without a copy per row; the frame keeps the
query's column types (nullable integers stay integers, NULL stays null). The same scoping and
damaged-file errors as ``warehouse.query.run_named``.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from warehouse.location import Root
from warehouse.query import sql_text, trusted_connection


def frame_named(root: Root, name: str, params: dict[str, Any] | None = None,
                all_runs: bool = False) -> pl.DataFrame:
    """``warehouse/sql/<name>.sql`` with its parameters bound, as a DataFrame."""
    sql = sql_text(name)
    with trusted_connection(root, params, all_runs, sql) as con:
        frame: pl.DataFrame = con.sql(sql, params=params or {}).pl()
    return frame
