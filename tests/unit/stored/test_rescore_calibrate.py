"""Offline rescoring reproduces a run's check rows exactly; calibration counts agreement, false
alarms and misses against a person's labels, from the warehouse or from exported traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.catalog import CatalogError, bundled_suites, load_suites
from pipeline.stored.calibrate import CheckLabel, calibrate, load_labels, read_traces
from pipeline.stored.rescore import rescore_run
from pipeline.stored.trials import ScenarioIndex, stored_trials
from pipeline.sweep.grid import ModelConfig, expand
from pipeline.trial.run import RunContext, run_trial, tables_of
from warehouse.query import run_sql
from warehouse.writer import WarehouseWriter

CHECK_COLUMNS = ("trial_id, attempt_id, check_id, check_kind, score, passed, turn, step, detail, "
                 "check_version")
TRIAL_COLUMNS = ("trial_id, attempt_id, status, passed, score_state, score_invalidation, "
                 "score_function, score_arguments, score_response, vetoed, first_violation_turn, "
                 "first_violation_step, first_violation_check, steps_to_correct_continuation, "
                 "repeated_searches, forbidden_calls_attempted, failure_origin")
MODELS = ["reference/golden", "reference/mutant-stale-value", "reference/mutant-drops-negation",
          "reference/broken-empty"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rescore") / "warehouse"
    suites = load_suites(bundled_suites())
    results = [run_trial(spec, RunContext("orig", "test")) for spec in expand(
        suites, [ModelConfig(m) for m in MODELS], ["default"], ["chat", "summary", "structured"],
        1)]
    WarehouseWriter(root, "orig").write_batch(tables_of(results))
    return root


def _differ(root: Path, table: str, columns: str, a: str, b: str) -> int:
    query = (f"select count(*) from (select {columns} from {table} where run_id = '{a}' except "
             f"select {columns} from {table} where run_id = '{b}')")
    return int(run_sql(root, query).rows[0][0])


def test_rescoring_an_unchanged_run_reproduces_its_rows_exactly(run: Path) -> None:
    outcome = rescore_run(run, "orig", "again")
    assert (outcome.rescored, outcome.skipped, outcome.scenarios_changed) == (17 * 3 * 4, 0, 0)
    for table, columns in (("checks", CHECK_COLUMNS), ("trials", TRIAL_COLUMNS)):
        assert _differ(run, table, columns, "orig", "again") == 0
        assert _differ(run, table, columns, "again", "orig") == 0
    counts = run_sql(run, "select run_id, count(*) from checks group by 1 order by 1").rows
    assert counts[0][1] == counts[1][1] > 1000
    assert run_sql(run, "select count(*) from runs where run_id = 'again'").rows == [(1,)]


def _labels(run: Path) -> list[CheckLabel]:
    """Labels for two trials: one agreeing everywhere, one a person reads differently."""
    rows = run_sql(run, "select t.trial_id, t.scenario_id, t.memory_mode, t.repeat, c.check_id, "
                        "c.passed from checks c join trials t using (run_id, trial_id) where "
                        "run_id = 'orig' and t.scenario_id = 'V1' and t.memory_mode = 'chat' and "
                        "t.model in ('reference/golden', 'reference/mutant-stale-value') "
                        "order by t.model, c.check_id").rows
    labels = []
    for trial_id, scenario, mode, repeat, check_id, passed in rows:
        verdict = "pass" if passed else "fail"
        if check_id == "said_vs_done":  # a person disagrees with this one verdict each time
            verdict = "fail" if passed else "pass"
        labels.append(CheckLabel(run_id="orig", trial_id=trial_id, scenario_id=scenario,
                                 memory_mode=mode, repeat=repeat, check_id=check_id,
                                 verdict=verdict, note="test"))
    return labels


def test_calibration_counts_agreement_false_alarms_and_misses(run: Path) -> None:
    labels = _labels(run)
    result = calibrate(labels, stored_trials(run, "orig"), ScenarioIndex())
    for source in ("recorded", "today"):
        total = result.total(source)
        assert total.labelled == len(labels)
        assert total.misses == 2 and total.false_alarms == 0  # said_vs_done passed both times
        assert total.agree == len(labels) - 2
        assert result.by_kind[source]["said_vs_done"].agreement == 0.0
    assert {d.label.check_id for d in result.disagreements} == {"said_vs_done"}
    assert result.trials == 2


def test_labels_are_validated_with_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    good = {"run_id": "r", "trial_id": "t", "scenario_id": "V1", "memory_mode": "chat",
            "repeat": 0, "check_id": "said_vs_done", "verdict": "pass"}
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "verdict": "maybe"}) + "\n")
    with pytest.raises(CatalogError) as caught:
        load_labels([path])
    assert (caught.value.line, caught.value.field) == (2, "verdict")


@pytest.mark.slow  # over a second (the fast tier stays under a minute)
def test_the_cli_calibrates_from_the_warehouse_and_from_exported_traces(
        run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.cli import app as cli
    monkeypatch.setenv("AGENTSWEEP_HOME", str(run.parent))
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(label.model_dump_json() + "\n" for label in _labels(run)))
    traces = tmp_path / "traces.jsonl"
    runner = CliRunner()
    exported = runner.invoke(cli.app, ["checks", "export", "--run-id", "orig", "--labels",
                                       str(labels), "-o", str(traces)])
    assert exported.exit_code == 0, exported.output
    assert len(read_traces(traces)) == 2
    outputs = []
    for source in (["--run-id", "orig"], ["--traces", str(traces)]):
        result = runner.invoke(cli.app, ["checks", "calibrate", "--labels", str(labels),
                                         *source])
        assert result.exit_code == 0, result.output
        assert "miss: V1/chat/r0 said_vs_done" in result.output
        outputs.append(result.output)
    assert outputs[0] == outputs[1]


def test_show_prints_one_trial_by_a_short_id(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.cli import app as cli
    monkeypatch.setenv("AGENTSWEEP_HOME", str(run.parent))
    (trial_id,) = run_sql(run, "select trial_id from trials where run_id = 'orig' and "
                               "scenario_id = 'F1' and memory_mode = 'structured' and "
                               "model = 'reference/mutant-drops-negation'").rows[0]
    shown = CliRunner().invoke(cli.app, ["show", trial_id[:10], "--run-id", "orig"])
    assert shown.exit_code == 0, shown.output
    version = run_sql(run, "select scenario_version from trials where trial_id = $t",
                      {"t": trial_id}).rows[0][0]
    assert f"F1 v{version} / structured / repeat 0 / reference/mutant-drops-negation" in \
        shown.output
    assert "[2.0] USER: Стоп, ничего не бронируй." in shown.output
    assert "-> search_rooms" in shown.output and "(rejected: turn 2: invariant" in shown.output
    assert "FAIL memory:invalid@2" in shown.output
    rescore_run(run, "orig", "copy-for-show")  # the same trial id in a second run
    ambiguous = CliRunner().invoke(cli.app, ["show", trial_id[:10]])
    assert ambiguous.exit_code == 2 and "add --run-id" in ambiguous.stderr


def test_a_not_applicable_label_agrees_with_an_absent_check_and_fails_a_failed_one() -> None:
    from pipeline.stored.calibrate import Tally

    tally = Tally()
    assert tally.add(None, "n/a") and tally.add(True, "n/a")
    assert not tally.add(False, "n/a")  # the check should not be there, and it failed the trial
    assert not tally.add(True, "fail")
    assert (tally.labelled, tally.agree, tally.false_alarms, tally.misses) == (4, 2, 1, 1)


REPO = Path(__file__).resolve().parents[3]
R2_CHAT = "c33686d5ab1cf1c91b7b055da6be8947"
"""local-2-after, R2 chat: rooms re-listed with "внешний аудитор" as a feature."""


def _label_set(folder: Path, name: str, labels: list[dict[str, object]]) -> None:
    source = REPO / "catalogs" / "meeting_rooms" / "labels" / "local-2-after.traces.jsonl"
    trace = next(line for line in source.read_text("utf-8").splitlines() if R2_CHAT in line)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.traces.jsonl").write_text(trace + "\n", "utf-8")
    (folder / f"{name}.jsonl").write_text(
        "".join(json.dumps({"run_id": "local-2-after", "trial_id": R2_CHAT, "scenario_id": "R2",
                            "memory_mode": "chat", "repeat": 0, **label}) + "\n"
                for label in labels), "utf-8")


def test_every_committed_label_set_is_found_and_a_judges_set_is_left_out(
        tmp_path: Path) -> None:
    from pipeline.stored.calibrate import committed_label_sets

    _label_set(tmp_path / "meeting_rooms" / "labels", "one", [])
    _label_set(tmp_path / "orders" / "labels", "judged", [])
    (tmp_path / "orders" / "labels" / "judged.judgments.jsonl").write_text("")
    (tmp_path / "orders" / "labels" / "lonely.jsonl").write_text("")  # no traces beside it
    later = tmp_path / "meeting_rooms" / "labels" / "one.later.jsonl"  # reads one.traces.jsonl
    later.write_text("")
    found = committed_label_sets([tmp_path])
    assert [s.name for s in found] == ["meeting_rooms/one", "meeting_rooms/one.later"]
    assert found[0].traces == found[1].traces
    bundled = {s.name for s in committed_label_sets([REPO / "catalogs"])}
    assert {"meeting_rooms/local-1", "meeting_rooms/local-1.grounding",
            "guest_pass/local-2-after", "orders/local-2-before"} <= bundled
    assert "orders/local-judge-1" not in bundled


def test_label_sets_are_summed_and_each_disagreement_names_its_set(tmp_path: Path) -> None:
    from pipeline.stored.calibrate import calibrate_sets, committed_label_sets

    _label_set(tmp_path / "meeting_rooms" / "labels", "a", [
        {"check_id": "trial", "verdict": "fail"},
        {"check_id": "grounding@2", "verdict": "fail"}])
    _label_set(tmp_path / "meeting_rooms" / "labels", "b", [
        {"check_id": "grounding@1", "verdict": "pass"},
        {"check_id": "grounding@2", "verdict": "pass", "note": "a reader who disagrees"}])
    result = calibrate_sets(committed_label_sets([tmp_path]), ScenarioIndex())
    assert result.trials == 2
    today = result.by_kind["today"]
    assert (today["grounding"].labelled, today["grounding"].agree) == (3, 2)
    assert today["trial"].agree == 1
    (wrong,) = [d for d in result.disagreements if d.source == "today"]
    assert (wrong.origin, wrong.label.check_id, wrong.check_passed) == (
        "meeting_rooms/b", "grounding@2", False)


@pytest.mark.slow  # rescores every committed trial (a few seconds)
def test_the_cli_calibrates_every_committed_label_set_in_one_table() -> None:
    from pipeline.cli import app as cli

    result = CliRunner().invoke(cli.app, ["checks", "calibrate", "--committed"])
    assert result.exit_code == 0, result.output
    assert "meeting_rooms/local-1" in result.output and "guest_pass/local-2-after" in result.output
    assert result.output.count("check calibration:") == 1
    refused = CliRunner().invoke(cli.app, ["checks", "calibrate", "--committed", "--run-id", "x"])
    assert refused.exit_code != 0
