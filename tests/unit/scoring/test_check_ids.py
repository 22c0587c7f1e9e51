"""Check ids are readable UTF-8 (``экран``, not ``\\u044d\\u043a...``) where they are made,
stored and printed; ids stored by older runs, with JSON escapes, read back as today's, so old
and new runs and the committed labels name the same check alike."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE

from pipeline.catalog import load_suites
from pipeline.cli.show import check_lines
from pipeline.scoring.check_ids import readable_check_id
from pipeline.stored.calibrate import CheckLabel, calibrate
from pipeline.stored.trials import ScenarioIndex, StoredTrial, stored_trials
from pipeline.sweep.grid import ModelConfig, expand
from pipeline.trial.run import RunContext, run_trial, tables_of
from warehouse.query import run_sql
from warehouse.writer import WarehouseWriter

CYRILLIC = re.compile("[а-яё]")
NEW = 'argument:*.required_features=["экран"]@1..1'
OLD = 'argument:*.required_features=["\\u044d\\u043a\\u0440\\u0430\\u043d"]@1..1'


def _escaped(rows: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """The rows as a run before readable ids stored them: non-ASCII as JSON escapes."""
    def old(value: Any) -> Any:
        return value.encode("ascii", "backslashreplace").decode() if isinstance(value, str) \
            else value
    return {table: [{k: old(v) if k in ("check_id", "first_violation_check") else v
                     for k, v in row.items()} for row in table_rows]
            for table, table_rows in rows.items()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run ``new`` as today writes it, run ``old`` the same trials with escaped ids."""
    root = tmp_path_factory.mktemp("ids") / "warehouse"
    specs = list(expand(load_suites([MEETING_SUITE]), [
        ModelConfig("reference/golden"), ModelConfig("reference/mutant-stale-value")],
        ["default"], ["chat"], 1))
    for run_id, shape in (("new", dict), ("old", _escaped)):
        rows = tables_of([run_trial(s, RunContext(run_id, "test")) for s in specs
                          if s.scenario.id in ("R1", "F1")])
        WarehouseWriter(root, run_id).write_batch(shape(rows))
    return root


def test_a_check_id_with_cyrillic_is_stored_and_printed_as_cyrillic(runs: Path) -> None:
    stored = [str(r[0]) for r in run_sql(runs, "select check_id from checks where run_id = "
                                               "'new'").rows]
    assert NEW in stored
    assert not [i for i in stored if "\\u" in i]
    printed = [line for trial in stored_trials(runs, "new") for line in check_lines(trial)]
    assert any(NEW in line for line in printed)
    assert not [line for line in printed if "\\u04" in line]


def test_an_older_runs_escaped_ids_read_as_todays(runs: Path) -> None:
    raw = [str(r[0]) for r in run_sql(runs, "select check_id from checks where run_id = "
                                            "'old'").rows]
    assert OLD in raw  # the old form really is in the warehouse
    def ids(run_id: str) -> list[tuple[str, str, str]]:
        return sorted((str(t.row["trial_id"]), str(c["check_id"]),
                       str(t.row["first_violation_check"])) for t in stored_trials(runs, run_id)
                      for c in t.checks)
    assert ids("old") == ids("new")
    assert any(CYRILLIC.search(check) for _, check, _ in ids("old"))
    line = StoredTrial(stored_trials(runs, "old")[0].row, (), ({"check_id": OLD},)).to_json()
    assert StoredTrial.from_json(line.replace("экран", "\\\\u044d\\\\u043a\\\\u0440"
                                              "\\\\u0430\\\\u043d")).checks[0]["check_id"] == NEW


def test_a_label_naming_an_old_id_calibrates_against_new_checks(runs: Path) -> None:
    trial = next(t for t in stored_trials(runs, "new")
                 if any(c["check_id"] == NEW for c in t.checks))
    label = CheckLabel(run_id="new", trial_id=str(trial.row["trial_id"]),
                       scenario_id=str(trial.row["scenario_id"]), memory_mode="chat",
                       repeat=0, check_id=OLD, verdict="pass")
    assert label.check_id == NEW
    result = calibrate([label], [trial], ScenarioIndex())
    assert result.unmatched == {} and result.total("today").labelled == 1


@pytest.mark.parametrize(("stored", "read"), [
    (OLD, NEW), (NEW, NEW), ('x="\\\\u0041"', 'x="\\\\u0041"'),  # an escaped backslash stays
    ('x="\\ud83d\\ude00"', 'x="😀"'), ('x="\\ud83d"', 'x="\\ud83d"'),  # a lone half stays
])
def test_readable_check_id(stored: str, read: str) -> None:
    assert readable_check_id(stored) == read
