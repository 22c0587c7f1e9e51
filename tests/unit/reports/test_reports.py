"""reports/: the baseline comparison as a polars DataFrame, its CSV, and the room's boundary.
(The comparison's transitions per cell are pinned in test_nightly.py.)"""

from __future__ import annotations

import csv
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from conftest import REPO

from reports import compare_runs, write_comparison, write_csv
from warehouse.frames import frame_named
from warehouse.schema import TABLES
from warehouse.writer import WarehouseError, WarehouseWriter

T0 = datetime(2026, 5, 1, 2, 0, tzinfo=UTC)


def _trial(run_id: str, scenario: str, repeat: int, passed: bool, model: str = "m/a"
           ) -> dict[str, Any]:
    fill = {pa.types.is_string: "x", pa.types.is_integer: 0, pa.types.is_floating: 0.0,
            pa.types.is_boolean: False, pa.types.is_timestamp: T0, pa.types.is_list: []}
    row = {c.name: next(v for test, v in fill.items() if test(c.type))
           for c in TABLES["trials"].columns if not c.nullable}
    row.update(run_id=run_id, trial_id=f"{scenario}-{model}-{repeat}", scenario_id=scenario,
               model=model, prompt_id="default", memory_mode="chat", repeat=repeat,
               status="complete", passed=passed, attempt_id=f"{run_id}-{repeat}")
    return row


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "warehouse"
    WarehouseWriter(root, "base").write_batch({"trials": [
        _trial("base", "V1", 0, True), _trial("base", "V1", 1, True),
        _trial("base", "OLD", 0, True)]})
    WarehouseWriter(root, "cand").write_batch({"trials": [
        _trial("cand", "V1", 0, True), _trial("cand", "V1", 1, False),
        _trial("cand", "NEW", 0, True, model='odd "model", quoted')]})
    return root


def test_the_comparison_is_a_polars_frame_with_the_querys_types(root: Path) -> None:
    comparison = compare_runs(root, "base", "cand")
    frame = comparison.frame
    assert isinstance(frame, pl.DataFrame)
    assert frame["change"].to_list() == ["regressed", "dropped", "new"]
    assert frame.schema["baseline_k"] == pl.Int64 and frame["baseline_k"].to_list() == [2, 1, None]
    assert comparison.changes() == {"regressed": 1, "dropped": 1, "new": 1}
    assert comparison.regressed_cells() == ["V1/m/a/chat 2/2 -> 1/2"]


def test_the_report_csv_has_nulls_empty_and_quotes_doubled(root: Path, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    comparison = write_comparison(root, reports, "base", "cand")
    assert comparison.report == reports / "cand-vs-base.csv"
    text = comparison.report.read_text("utf-8")
    assert text.startswith("scenario_id,agent,model,prompt_id,memory_mode,baseline,candidate,")
    assert "\r" not in text and text.endswith("\n")
    with comparison.report.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    new = next(r for r in rows if r["change"] == "new")
    assert new["model"] == 'odd "model", quoted'
    assert (new["baseline_k"], new["baseline"], new["review"]) == ("", "-", "")
    assert list(reports.iterdir()) == [comparison.report]


def test_the_csv_reads_as_the_csv_module_wrote_it(tmp_path: Path) -> None:
    """Null and the empty string are both an empty field (the report's format before polars)."""
    frame = pl.DataFrame({"s": ["", None, 'a "b", c'], "n": [1, None, 3]})
    text = write_csv(tmp_path / "r.csv", frame).read_text("utf-8")
    assert text == 's,n\n,1\n,\n"a ""b"", c",3\n'


def test_a_report_that_fails_mid_write_keeps_the_old_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "r.csv"
    write_csv(path, pl.DataFrame({"a": [1]}))

    def half_then_full(self: pl.DataFrame, file: Path, **kwargs: Any) -> None:
        Path(file).write_text("half", "utf-8")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pl.DataFrame, "write_csv", half_then_full)
    with pytest.raises(OSError):
        write_csv(path, pl.DataFrame({"a": [2]}))
    assert path.read_text("utf-8") == "a\n1\n"
    assert list(tmp_path.iterdir()) == [path]


def test_frames_read_only_the_runs_named_and_name_a_damaged_file(root: Path) -> None:
    (root / "trials" / "run_id=other").mkdir()
    (root / "trials" / "run_id=other" / "part-x.parquet").write_bytes(b"not parquet")
    assert frame_named(root, "trial_count", {"run_id": "base"})["trials"].to_list() == [3]
    with pytest.raises(WarehouseError, match="cannot be read"):
        frame_named(root, "trial_count", {"run_id": "other"})


def test_reports_import_nothing_of_pipeline_or_flows() -> None:
    code = ("import sys, reports, reports.compare\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pipeline', 'flows'))\n"
            "print(','.join(bad))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == ""
