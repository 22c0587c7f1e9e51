"""`agentsweep sql` is read-only over the warehouse: queries run, nothing can be changed,
attached, installed, exported by DuckDB or read from outside the warehouse."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import MEETING_SUITE
from typer.testing import CliRunner

from pipeline.catalog import load_suites
from pipeline.sweep.grid import ModelConfig, expand
from pipeline.trial.run import RunContext, run_trial, tables_of
from warehouse.writer import WarehouseWriter


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("sql") / "home"
    results = [run_trial(s, RunContext("done", "test")) for s in expand(
        load_suites([MEETING_SUITE]), [ModelConfig("reference/golden")], ["default"], ["chat"],
        1)]
    WarehouseWriter(home / "warehouse", "done").write_batch(tables_of(results))
    return home


def _fingerprint(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _sql(home: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> object:
    from pipeline.cli import app as cli
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    return CliRunner().invoke(cli.app, ["sql", *args])


ESCAPES = [
    "COPY (SELECT * FROM trials WHERE false) TO '{wh}/trials/run_id=done/part-evil.parquet'",
    "COPY trials_all TO '{tmp}/exported.csv'",
    "SELECT 1; COPY (SELECT 1) TO '{tmp}/second.csv'",
    "ATTACH '{tmp}/attached.duckdb' AS other",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "CREATE TABLE evil AS SELECT 1",
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM glob('/etc/*')",
    "SELECT * FROM read_parquet('https://127.0.0.1:9/x.parquet')",
    "EXPORT DATABASE '{tmp}/dump'",
    "PRAGMA enable_profiling",
]


@pytest.mark.parametrize("query", ESCAPES)
def test_every_escape_is_refused_and_nothing_changes(home: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     query: str) -> None:
    before = _fingerprint(home / "warehouse")
    result = _sql(home, monkeypatch, query.format(wh=home / "warehouse", tmp=tmp_path))
    assert result.exit_code == 2, result.output  # type: ignore[attr-defined]
    assert _fingerprint(home / "warehouse") == before
    assert list(tmp_path.iterdir()) == []
    hostname = Path("/etc/hostname").read_text().strip() if Path("/etc/hostname").exists() else ""
    assert not hostname or hostname not in result.output  # type: ignore[attr-defined]


def test_queries_still_run_and_a_result_can_be_written_where_the_user_says(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _sql(home, monkeypatch, "--format", "csv",
                  "with t as (select * from trials) select count(*) from t")
    assert result.exit_code == 0 and result.output.splitlines()[1] == "11"  # type: ignore
    target = tmp_path / "out" / "passed.parquet"
    written = _sql(home, monkeypatch, "--output", str(target),
                   "select scenario_id, passed from trials order by 1")
    assert written.exit_code == 0, written.output  # type: ignore[attr-defined]
    assert pq.read_table(target).num_rows == 11
    assert [p.name for p in target.parent.iterdir()] == ["passed.parquet"]
