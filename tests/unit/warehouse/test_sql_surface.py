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


def test_sql_output_over_a_runs_trials_parquet_is_refused_and_the_file_unchanged(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (trials,) = sorted((home / "warehouse").rglob("trials/**/*.parquet"))
    before = _fingerprint(home / "warehouse")
    result = _sql(home, monkeypatch, "--output", str(trials), "--force", "select 1 as v")
    assert result.exit_code == 2, result.output  # type: ignore[attr-defined]
    assert "inside the warehouse" in result.output  # type: ignore[attr-defined]
    assert _fingerprint(home / "warehouse") == before


@pytest.mark.parametrize("where", ["home", "home-link", "new-in-warehouse"])
def test_sql_output_anywhere_in_our_home_is_refused(home: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    where: str) -> None:
    if where == "home-link":  # a link the user made into the home is followed
        (tmp_path / "link").symlink_to(home, target_is_directory=True)
    target = {"home": home / "out.csv", "home-link": tmp_path / "link" / "out.csv",
              "new-in-warehouse": home / "warehouse" / "trials" / "x.parquet"}[where]
    result = _sql(home, monkeypatch, "--output", str(target), "select 1 as v")
    assert result.exit_code == 2, result.output  # type: ignore[attr-defined]
    assert not target.exists()


def test_sql_output_over_an_existing_file_needs_force(home: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "kept.csv"
    target.write_text("mine\n")
    refused = _sql(home, monkeypatch, "--output", str(target), "select 1 as v")
    assert refused.exit_code == 2, refused.output  # type: ignore[attr-defined]
    assert "--force" in refused.output  # type: ignore[attr-defined]
    assert target.read_text() == "mine\n"
    forced = _sql(home, monkeypatch, "--output", str(target), "--force", "select 1 as v")
    assert forced.exit_code == 0, forced.output  # type: ignore[attr-defined]
    assert target.read_text().splitlines() == ["v", "1"]


@pytest.mark.parametrize("command", [
    ["report", "html", "--run-id", "done", "-o"],
    ["judge", "export", "--run-id", "done", "-o"],
    ["checks", "export", "--run-id", "done", "-o"],
    ["export", "tau2", "--run-id", "done", "--out"],
    ["gate", "done", "--baseline", "done", "--junit"],
    ["compare", "done", "done", "--junit"],
    ["run", "--run-id", "never", "--junit"],
])
def test_every_export_refuses_our_data_and_an_existing_file(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        command: list[str]) -> None:
    from pipeline.cli import app as cli
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    (trials,) = sorted((home / "warehouse").rglob("trials/**/*.parquet"))
    before = _fingerprint(home / "warehouse")
    kept = tmp_path / "kept.out"
    kept.write_text("mine\n")
    for target, extra in ((trials, ["--force"]), (kept, [])):
        result = CliRunner().invoke(cli.app, [*command, str(target), *extra])
        assert result.exit_code == 2, result.output
        assert "error: " in result.output and str(target) in result.output
    assert _fingerprint(home / "warehouse") == before
    assert kept.read_text() == "mine\n"


@pytest.mark.parametrize("value", ["[/x]", "[link=https://evil.example]click[/link]",
                                   "[bold red]alarm[/bold red]", ":warning: [/]"])
def test_stored_text_is_never_markup_in_a_table(home: Path, monkeypatch: pytest.MonkeyPatch,
                                                value: str) -> None:
    quoted = value.replace("'", "''")
    result = _sql(home, monkeypatch, f"select '{quoted}' as v, '{quoted}' as \"{quoted}\"")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    shown = result.output  # type: ignore[attr-defined]
    assert shown.count(value) == 3  # the two cells and the header, as written
    assert "\x1b]8;" not in shown  # no terminal hyperlink


def test_a_bidi_override_in_a_table_is_shown_as_a_visible_escape(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _sql(home, monkeypatch,
                  "select 'invoice' || chr(8238) || 'fdp.exe' || chr(8203) as v")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    shown = result.output  # type: ignore[attr-defined]
    assert "invoice<U+202E>fdp.exe<U+200B>" in shown
    assert "\u202e" not in shown and "\u200b" not in shown


def test_a_file_in_the_working_directorys_duckdb_temp_folder_is_not_readable(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DuckDB allows its temp directory, by default ``.tmp`` where the command runs: a file
    put there could be read by ``agentsweep sql``."""
    (tmp_path / ".tmp").mkdir()
    (tmp_path / ".tmp" / "planted.csv").write_text("secret\ncanary-tmp-9f8e7d\n", "utf-8")
    monkeypatch.chdir(tmp_path)
    for path in (".tmp/planted.csv", str(tmp_path / ".tmp" / "planted.csv")):
        result = _sql(home, monkeypatch, f"SELECT * FROM read_csv('{path}')")
        assert result.exit_code == 2, result.output  # type: ignore[attr-defined]
        assert "canary-tmp-9f8e7d" not in result.output  # type: ignore[attr-defined]
