"""tau2's NL assertions go to the judge as a separate signal, and the tau2_rewards view
multiplies the components of each scenario's reward_basis into its own column, tau2_reward;
neither ever changes trials.passed."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, loaded_suite

from pipeline.catalog import Suite
from pipeline.judge import JudgeOptions, judge_run, load_rubric
from pipeline.judge.evidence import gather
from pipeline.reference.judges import nl_judge
from pipeline.stored.trials import ScenarioIndex, stored_trials
from pipeline.sweep.grid import ModelConfig, expand
from pipeline.trial.run import RunContext, TrialResult, run_trial, tables_of
from warehouse.query import run_sql
from warehouse.writer import WarehouseWriter

DOMAIN = REPO / "catalogs" / "tau2_retail"
SUITE = DOMAIN / "suites" / "retail.jsonl"
RUBRIC = DOMAIN / "rubrics" / "nl_assertions.md"
GOLDEN, DROPS = "reference/golden", "reference/mutant-drops-last-write"
REWARDS = ("select scenario_id, model, status, code_passed, judge_verdict, database_reward, "
           "action_reward, nl_assertion_reward, tau2_reward from tau2_rewards "
           "where judge_model is not distinct from $j")


def _suite(ids: set[str]) -> Suite:
    suite = loaded_suite(SUITE)
    return dataclasses.replace(suite, scenarios=tuple(
        s for s in suite.scenarios if s.scenario.id in ids))


def _with_action_in_basis(suite: Suite) -> Suite:
    return dataclasses.replace(suite, scenarios=tuple(dataclasses.replace(
        s, scenario=s.scenario.model_copy(update={"reward_basis": [
            *s.scenario.reward_basis, "action"]})) for s in suite.scenarios))


def _run(suite: Suite, model: str) -> list[TrialResult]:
    return [run_trial(spec, RunContext("tau2-reward", "test")) for spec in expand(
        [suite], [ModelConfig(model)], ["default"], ["chat"], 1)]


def _ended_early(result: TrialResult) -> TrialResult:
    """The same dialog, as if an agent error had ended it (another trial id)."""
    trial = dataclasses.replace(result.trial, trial_id=result.trial.trial_id + "-early",
                                status="agent_error", error_kind="empty_response",
                                passed=False)
    return dataclasses.replace(result, trial=trial)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Golden on 0 (no NL assertions), 16 (its figure said), 36 (the golden reply says 481.5,
    the assertion $481.50) and 105 (its one write is refused); the mutant that drops the last
    write on 0 and on 105 with action added to its basis; golden 0 ended by an agent error."""
    results = _run(_suite({"0", "16", "36", "105"}), GOLDEN)
    results += _run(_suite({"0"}), DROPS)
    results += _run(_with_action_in_basis(_suite({"105"})), DROPS)
    results.append(_ended_early(next(r for r in results if r.trial.scenario_id == "0")))
    root = tmp_path_factory.mktemp("tau2-reward") / "warehouse"
    WarehouseWriter(root, "tau2-reward").write_batch(tables_of(results))
    return root


def _rewards(root: Path, judge: str | None) -> dict[tuple[str, str, str], tuple[Any, ...]]:
    rows = run_sql(root, REWARDS, {"j": judge}).rows
    return {(r[0], r[1].removeprefix("reference/"), r[2]): r[3:] for r in rows}


def test_the_nl_rubric_sees_the_assertions_and_the_transcript_as_data(run: Path) -> None:
    rubric = load_rubric(RUBRIC)
    assert (rubric.id, rubric.version, rubric.evidence, rubric.requires) == (
        "nl_assertions", 1, ("nl_assertions", "transcript"), ("nl_assertions",))
    trial = next(t for t in stored_trials(run, "tau2-reward")
                 if t.row["scenario_id"] == "105" and t.row["model"] == GOLDEN)
    found = ScenarioIndex().find(trial.row)
    evidence = gather(trial, found[0] if found else None, rubric.evidence)
    transcript = evidence.values["transcript"]
    assert evidence.values["nl_assertions"] == [
        "Agent should exchange both tea kettles (same style) to the items requested"]
    assert [e["role"] for e in transcript] == ["user", "assistant", "tool", "assistant"]
    assert transcript[1]["tool_call"]["name"] == "exchange_delivered_order_items"
    assert transcript[2]["error"] == (
        "Insufficient gift card balance to pay for the price difference")
    assert evidence.text().startswith("BEGIN UNTRUSTED EVIDENCE")


def test_the_reference_nl_judge_decides_by_figures_said_and_calls_that_held() -> None:
    said = [{"role": "assistant", "content": "Your refund is $8,276.23 in total."}]
    assert '"pass": true' in nl_judge({"nl_assertions": [
        "Agent should tell the user the total refund amount is $8,276.23."], "transcript": said})
    assert '"pass": false' in nl_judge({"nl_assertions": [
        "The camera costs $481.50."], "transcript": [{"role": "assistant", "content": "481.5"}]})
    refused = [{"role": "tool", "name": "x", "result": None, "error": "no"}]
    assert '"pass": false' in nl_judge({"nl_assertions": ["Agent should process it."],
                                        "transcript": refused})
    assert '"pass": true' in nl_judge({"nl_assertions": ["Agent should process it."],
                                       "transcript": [{"role": "tool", "result": "{}"}]})


def test_tau2_reward_multiplies_the_basis_and_the_judge_never_changes_passed(
        run: Path) -> None:
    before = run_sql(run, "select trial_id, passed from trials order by 1").rows
    unjudged = _rewards(run, None)
    assert unjudged[("0", "golden", "complete")] == (True, None, 1, 1, 1, 1)  # no assertion
    assert unjudged[("16", "golden", "complete")][-2:] == (None, None)  # its verdict missing
    assert unjudged[("0", "golden", "agent_error")][-1] == 0  # did not end normally
    assert unjudged[("0", "mutant-drops-last-write", "complete")][-1] == 0  # the database
    outcome = judge_run(run, "tau2-reward", JudgeOptions(
        ModelConfig("reference/judge-nl").resolved(), rubric=load_rubric(RUBRIC)))
    assert outcome.skipped_nothing_to_judge == 3  # the trials of task 0: no NL assertions
    assert {r.trial_id for r in outcome.rows} == {
        str(t) for (t,) in run_sql(run, "select trial_id from trials where scenario_id <> '0'"
                                   ).rows}
    assert run_sql(run, "select trial_id, passed from trials order by 1").rows == before
    judged = _rewards(run, "reference/judge-nl")
    assert judged == {
        # code_passed, judge_verdict, database, action, nl_assertion, tau2_reward
        ("0", "golden", "complete"): (True, None, 1, 1, 1, 1),
        ("0", "golden", "agent_error"): (False, None, 1, 1, 1, 0),
        ("16", "golden", "complete"): (True, "pass", 1, 1, 1, 1),
        ("36", "golden", "complete"): (True, "fail", 1, 1, 0, 0),  # "481.5", not "$481.50"
        ("105", "golden", "complete"): (True, "fail", 1, 1, 0, 0),  # its one call refused
        ("0", "mutant-drops-last-write", "complete"): (False, None, 0, 0, 1, 0),
        # action in this basis: the action check fails passed and the reward, not the database
        ("105", "mutant-drops-last-write", "complete"): (False, "fail", 1, 0, 0, 0),
    }


def test_an_uncounted_check_is_no_rule_code_and_show_marks_it_a_signal(run: Path) -> None:
    from pipeline.cli.show import check_lines
    from warehouse.query import run_named

    trial = next(t for t in stored_trials(run, "tau2-reward")
                 if t.row["scenario_id"] == "0" and t.row["model"] == DROPS)
    codes = {r[1] for r in run_named(run, "failed_checks", {"run_id": "tau2-reward"}).rows
             if r[0] == trial.row["trial_id"]}
    assert codes == {"database:tables"}  # the failed action check is recorded, not a rule code
    assert any(line.startswith("  FAIL action (a signal: not counted in passed): 1 of 5 ")
               for line in check_lines(trial))
