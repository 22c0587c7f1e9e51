"""A damaged file from an old run never blocks a new run; it is named, and `warehouse check`
finds even damage DuckDB would read silently (page checksums)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import MEETING_SUITE
from typer.testing import CliRunner

from pipeline.catalog import load_suites
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.grid import ModelConfig, expand
from pipeline.sweep.stages import plan, run_exists, summarize
from pipeline.trial.run import RunContext, run_trial, tables_of
from warehouse.check import check_warehouse
from warehouse.writer import WarehouseError, WarehouseWriter


def _write_run(root: Path, run_id: str) -> Path:
    results = [run_trial(s, RunContext(run_id, "test")) for s in expand(
        load_suites([MEETING_SUITE]), [ModelConfig("reference/golden")], ["default"], ["chat"],
        1)]
    writer = WarehouseWriter(root, run_id)
    tables = tables_of(results)
    writer.write_batch({"trials": tables["trials"], "events": tables["events"]})
    return next(p for p in writer.files_written if p.parts[-3] == "trials")


def _inside_a_data_page(path: Path) -> int:
    """A byte offset in the middle of the largest column chunk's pages (past its page header),
    wherever the schema's columns put it."""
    import pyarrow.parquet as pq

    group = pq.ParquetFile(path).metadata.row_group(0)
    chunk = max((group.column(i) for i in range(group.num_columns)),
                key=lambda c: c.total_compressed_size)
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    return int(start + chunk.total_compressed_size // 2)


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_an_old_damaged_file_is_named_and_never_blocks_a_new_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    root = tmp_path / "home" / "warehouse"
    old = _write_run(root, "old")
    data = bytearray(old.read_bytes())
    if damage == "truncate":
        old.write_bytes(bytes(data[: len(data) // 2]))
    else:  # one flipped byte inside a data page: DuckDB would read a wrong value silently
        data[_inside_a_data_page(old)] ^= 0xFF
        old.write_bytes(bytes(data))
    # the new run's own queries read only its own files
    config = SweepConfig(suites=[MEETING_SUITE], scenarios=["V1"], memory_modes=["chat"],
                         repeats=1, run_id="new", resume=True, warehouse=root)
    assert not run_exists(root, "new") and len(plan(config).pending) == 1
    _write_run(root, "new")
    assert summarize(root, "new")[1]
    count, damaged = check_warehouse(root)
    assert count == 4 and [d.path for d in damaged] == [old]
    if damage == "truncate":
        with pytest.raises(WarehouseError, match=str(old)):
            summarize(root, "old")
    from pipeline.cli import app as cli
    monkeypatch.setenv("AGENTSWEEP_HOME", str(root.parent))
    checked = CliRunner().invoke(cli.app, ["warehouse", "check"])
    assert checked.exit_code == 1 and str(old) in checked.output
