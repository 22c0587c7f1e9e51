"""The inputs are checked first: a bad suite is named even when the run id exists; a rule at a
turn past the dialog is refused; a raw U+2028 inside a JSON string of a suite line is valid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import MEETING_SUITE
from helpers.commands import cli

from pipeline.catalog import CatalogError, load_suite, load_suites
from pipeline.sweep.grid import ModelConfig, expand
from pipeline.trial.run import RunContext, run_trial, tables_of
from warehouse.writer import WarehouseWriter


def _lines() -> list[dict]:
    return [json.loads(line) for line in MEETING_SUITE.read_text("utf-8").splitlines()]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def test_a_bad_suite_is_named_before_the_existing_run_id(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (spec,) = [s for s in expand(load_suites([MEETING_SUITE]), [ModelConfig("reference/golden")],
                                 ["default"], ["chat"], 1)][:1]
    WarehouseWriter(home / "warehouse", "taken").write_batch(
        tables_of([run_trial(spec, RunContext("taken", "test"))]))
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    rows = _lines()
    rows[1]["turns"][0]["golden"][0]["call"]["name"] = "launch_rockets"
    bad = _write(tmp_path / "bad.jsonl", rows)
    code, out, err = cli("run", "--run-id", "taken", "--suite", str(bad), "--memory-mode",
                         "chat")
    assert code == 2, out + err
    assert f"{bad}:2: turns.0.golden.0.call.name" in err and "already exists" not in err
    code, out, err = cli("run", "--run-id", "taken", "--suite", str(MEETING_SUITE),
                         "--memory-mode", "chat")
    assert code == 2 and "already exists" in err  # the run-id check still stands


@pytest.mark.parametrize(("field", "set_rule"), [
    ("expectations.fresh_calls.0.turn",
     lambda row, past: row["expectations"]["fresh_calls"][0].update(turn=past)),
    ("turning_point", lambda row, past: row.update(turning_point=past)),
    ("expectations.required_tools.0.turn",
     lambda row, past: row["expectations"]["required_tools"][0].update(turn=past)),
])
def test_a_turn_past_the_dialog_is_refused_naming_the_field(tmp_path: Path, field: str,
                                                            set_rule) -> None:
    rows = _lines()
    row = next(r for r in rows if r["expectations"].get("fresh_calls")
               and r["expectations"].get("required_tools"))
    set_rule(row, len(row["turns"]) + 1)
    path = _write(tmp_path / "suite.jsonl", rows)
    with pytest.raises(CatalogError) as caught:
        load_suite(path)
    assert (caught.value.line, caught.value.field) == (rows.index(row) + 1, field)
    assert "past the dialog's last turn" in caught.value.message


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085"])
def test_a_raw_line_separator_inside_a_json_string_is_accepted(tmp_path: Path,
                                                              separator: str) -> None:
    rows = _lines()
    rows[0]["turns"][0]["user"] += f"{separator}(and a second line)"
    path = _write(tmp_path / "suite.jsonl", rows)
    assert separator in path.read_text("utf-8")  # raw, as json.dumps(ensure_ascii=False) wrote
    suite = load_suite(path)
    assert suite.scenarios[0].scenario.turns[0].user == rows[0]["turns"][0]["user"]
    assert [s.line for s in suite.scenarios] == list(range(1, len(rows) + 1))
