"""A connection creates only the views its SQL needs (warehouse.view_plan): every view still
answers as it does with all of them created, a query that names none binds none, and a query
that reads the catalog sees every view."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest
from unit.warehouse.test_compact import _warehouse

from warehouse.query import VIEW_PLAN, connect, run_sql, run_user_sql

MACROS = sorted({s.name for s in VIEW_PLAN if s.name
                  and re.search(r"\bCREATE\s+(?:OR\s+REPLACE\s+)?MACRO\b", s.text, re.I)})
VIEWS = sorted({s.name for s in VIEW_PLAN if s.name and not s.name.startswith("_")} - set(MACROS))


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plan") / "warehouse"
    _warehouse(root, batches=2)
    return root


def _views_of(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    return {name for (name,) in rows}


def test_the_plan_names_the_views_of_the_sql_files() -> None:
    assert {"trials", "events", "checks", "runs", "trial_outcomes", "failure_map",
            "tau2_rewards", "judge_pass_rates", "cell_history", "regression_attribution"
            } <= set(VIEWS)
    assert {"cell_trials", "cell_window", "regressions_since"} <= set(MACROS)


def test_a_trend_macro_is_created_for_the_sql_that_calls_it_and_only_then(root: Path) -> None:
    sql = "SELECT count(*) FROM cell_window(TIMESTAMP '2000-01-01')"
    con = connect(root, for_sql=sql)
    try:
        assert con.execute(sql).fetchall() == connect(root).execute(sql).fetchall()
    finally:
        con.close()
    plain = connect(root, for_sql="SELECT count(*) FROM trials")
    try:
        names = {n for (n,) in plain.execute(
            "SELECT function_name FROM duckdb_functions() WHERE NOT internal").fetchall()}
        assert "cell_window" not in names and "cell_history" not in _views_of(plain)
    finally:
        plain.close()


@pytest.mark.parametrize("view", VIEWS)
def test_each_view_answers_alone_as_it_does_among_all(root: Path, view: str) -> None:
    sql = f"SELECT count(*) FROM {view}"
    alone = connect(root, for_sql=sql)
    every = connect(root)
    try:
        assert alone.execute(sql).fetchall() == every.execute(sql).fetchall()
        assert len(_views_of(alone)) < len(_views_of(every))  # it did not create them all
    finally:
        alone.close()
        every.close()


def test_sql_that_names_no_view_binds_none(root: Path) -> None:
    con = connect(root, for_sql="SELECT 1")
    try:
        assert _views_of(con) == set()  # not even the raw views over the files
    finally:
        con.close()


def test_a_query_of_the_catalog_sees_every_view(root: Path) -> None:
    shown = {name for (name,) in run_user_sql(root, "SHOW TABLES").rows}
    assert set(VIEWS) <= shown
    listed = {name for (name,) in run_user_sql(
        root, "SELECT view_name FROM duckdb_views() WHERE NOT internal").rows}
    assert set(VIEWS) <= listed


def test_a_query_of_a_raw_table_gets_only_that_table(root: Path) -> None:
    con = connect(root, for_sql="SELECT count(*) FROM events_all")
    try:
        assert _views_of(con) == {"events_all"}
        assert con.execute("SELECT count(*) FROM events_all").fetchall() == [(24,)]
    finally:
        con.close()


def test_a_dash_dash_in_a_string_hides_no_view(root: Path) -> None:
    result = run_user_sql(root, "SELECT '--', count(*) FROM trials")
    assert result.rows == [("--", 8)]


def test_a_shared_database_adds_the_views_each_query_needs(root: Path) -> None:
    """Trusted SQL shares a database per set of files: a later query that needs views the
    first did not create still finds them."""
    assert run_sql(root, "SELECT count(*) FROM trials", all_runs=True).rows == [(8,)]
    assert run_sql(root, "SELECT count(*) FROM trial_outcomes", all_runs=True).rows == [(8,)]
    assert run_sql(root, "SELECT count(*) FROM failure_map", all_runs=True).rows == [(0,)]
