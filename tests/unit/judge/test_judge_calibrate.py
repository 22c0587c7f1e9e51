"""Judge calibration against people: agreement, Cohen's kappa (checked against a value
computed by hand), the confusion matrix, the disagreeing trials, labels naming unknown trials
refused with file:line, from the warehouse and from exported files alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.catalog import catalogs_root, load_suite
from pipeline.judge import JudgeOptions, judge_run
from pipeline.stored.calibrate import Confusion
from pipeline.sweep.grid import ModelConfig, expand
from pipeline.trial.run import RunContext, run_trial, tables_of
from warehouse.query import run_sql
from warehouse.writer import WarehouseWriter

ORDERS = catalogs_root() / "orders" / "suites" / "orders.jsonl"


def test_kappa_matches_a_hand_computed_value() -> None:
    confusion = Confusion()
    for person, judge, count in (("pass", "pass", 20), ("pass", "fail", 5),
                                 ("fail", "pass", 10), ("fail", "fail", 15)):
        for _ in range(count):
            confusion.add(person, judge)
    # p_o = 35/50 = 0.7; person pass 25/50, judge pass 30/50:
    # p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    assert confusion.agreement == pytest.approx(0.7)
    assert confusion.kappa == pytest.approx(0.4)
    one_verdict = Confusion()
    one_verdict.add("pass", "pass")
    assert (one_verdict.agreement, one_verdict.kappa) == (1.0, None)
    chance = Confusion()
    for person, judge in (("pass", "pass"), ("pass", "fail"), ("fail", "pass"),
                          ("fail", "fail")):
        chance.add(person, judge)
    assert chance.kappa == pytest.approx(0.0)


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("judge-calibrate") / "warehouse"
    specs = expand([load_suite(ORDERS)], [ModelConfig("reference/golden"),
                                          ModelConfig("reference/mutant-wrong-answer")],
                   ["default"], ["chat"], 1)
    WarehouseWriter(root, "orders").write_batch(tables_of(
        [run_trial(spec, RunContext("orders", "test")) for spec in specs]))
    judge_run(root, "orders", JudgeOptions(ModelConfig("reference/judge-seed").resolved()))
    return root


def _labels(root: Path, path: Path) -> Path:
    """A person who passes every explanation but the ambiguous mutant's (it cancelled an
    order the user never chose, and says so: the person holds that it does not answer the
    request) -- two disagreements with the seed judge: that one, and the timeout answer."""
    rows = run_sql(root, "select trial_id, scenario_id, model from trials order by 1").rows
    lines = []
    for trial_id, scenario_id, model in rows:
        wrong = scenario_id == "ambiguous" and model == "reference/mutant-wrong-answer"
        lines.append(json.dumps({
            "run_id": "orders", "trial_id": trial_id, "scenario_id": scenario_id,
            "rubric_id": "explanation", "verdict": "fail" if wrong else "pass",
            "labeller": "a test", "date": "2026-12-01", "note": model}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_calibrate_prints_agreement_kappa_matrix_and_disagreements(
        judged: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.cli import app as cli
    monkeypatch.setenv("AGENTSWEEP_HOME", str(judged.parent))
    labels = _labels(judged, tmp_path / "labels.jsonl")
    runner = CliRunner()
    traces, judgments = tmp_path / "traces.jsonl", tmp_path / "judgments.jsonl"
    for args in (["checks", "export", "--run-id", "orders", "-o", str(traces)],
                 ["judge", "export", "--run-id", "orders", "-o", str(judgments)]):
        done = runner.invoke(cli.app, args)
        assert done.exit_code == 0, done.output
    outputs = []
    for source in (["--run-id", "orders"],
                   ["--traces", str(traces), "--judgments", str(judgments)]):
        result = runner.invoke(cli.app, ["judge", "calibrate", "--labels", str(labels),
                                         *source])
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    assert outputs[0] == outputs[1]
    # 14 trials: person pass 13 / fail 1; judge fail on the two timeout trials only.
    # pass/pass 11, pass/fail 2, fail/pass 1, fail/fail 0: p_o = 11/14;
    # p_e = (13/14)(12/14) + (1/14)(2/14) = 158/196; kappa = (154/196 - 158/196) / (38/196)
    kappa = (154 / 196 - 158 / 196) / (38 / 196)
    assert f"agreement {11 / 14:.3f}; Cohen's kappa {kappa:.3f}" in outputs[0]
    assert outputs[0].count("disagree: ") == 3
    assert "disagree: ambiguous" in outputs[0] and "person fail, judge pass" in outputs[0]
    assert "person pass, judge fail: The message invents a completed action" in outputs[0]


def test_labels_naming_unknown_trials_are_refused_with_file_and_line(
        judged: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.cli import app as cli
    monkeypatch.setenv("AGENTSWEEP_HOME", str(judged.parent))
    labels = _labels(judged, tmp_path / "labels.jsonl")
    lines = labels.read_text().splitlines()
    bad = json.loads(lines[2])
    bad["trial_id"] = "0" * 32
    lines[2] = json.dumps(bad)
    labels.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(cli.app, ["judge", "calibrate", "--labels", str(labels),
                                          "--run-id", "orders"])
    assert result.exit_code == 2
    assert f"{labels}:3: trial_id: run orders has no final trial {'0' * 32}" in " ".join(
        result.output.split())
    bad.pop("labeller")
    lines[2] = json.dumps(bad)
    labels.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(cli.app, ["judge", "calibrate", "--labels", str(labels),
                                          "--run-id", "orders"])
    assert result.exit_code == 2
    assert "labels.jsonl:3: labeller: missing: this key is required" in " ".join(
        result.output.split())


SHIPPED = catalogs_root() / "orders" / "labels"


def test_the_shipped_labelled_set_calibrates_without_the_warehouse() -> None:
    """The real-model set: kappa recomputed here from the files by the formula."""
    from pipeline.cli import app as cli
    labels = [json.loads(line) for line in (SHIPPED / "local-judge-1.jsonl").read_text(
        "utf-8").splitlines() if line.strip()]
    judgments = [json.loads(line) for line in (SHIPPED / "local-judge-1.judgments.jsonl"
                                               ).read_text("utf-8").splitlines() if line]
    assert len(labels) == 14 and all("AI" in label["labeller"] for label in labels)
    verdicts: dict[str, list[str]] = {}
    for row in judgments:
        verdicts.setdefault(row["trial_id"], []).append(row["verdict"])
    pairs = []
    for label in labels:
        votes = verdicts[label["trial_id"]]
        top = max(("pass", "fail", "error"), key=votes.count)
        if top != "error" and votes.count(top) * 2 > len(votes):
            pairs.append((label["verdict"], top))
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    chance = sum(sum(a == c for a, _ in pairs) / n * sum(b == c for _, b in pairs) / n
                 for c in ("pass", "fail"))
    result = CliRunner().invoke(cli.app, [
        "judge", "calibrate", "--labels", str(SHIPPED / "local-judge-1.jsonl"),
        "--traces", str(SHIPPED / "local-judge-1.traces.jsonl"),
        "--judgments", str(SHIPPED / "local-judge-1.judgments.jsonl")])
    assert result.exit_code == 0, result.output
    expected = (f"Cohen's kappa {(observed - chance) / (1 - chance):.3f}" if chance < 1
                else "Cohen's kappa undefined")
    assert f"agreement {observed:.3f}; {expected}" in result.output
