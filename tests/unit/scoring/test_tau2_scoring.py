"""tau2's ACTION component and combined reward (issue 13): the action check matches gold
actions against every tool call the agent made, counts toward passed only when the scenario's
reward_basis names it, and the tau2_reward view multiplies the components of the basis."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import pytest
from conftest import REPO, loaded_suite

from pipeline.catalog import ExpectedAction, Suite, load_domain
from pipeline.scoring.expected_actions import action_check, matches
from pipeline.scoring.journal import Call
from pipeline.sweep.grid import ModelConfig, expand
from pipeline.trial.run import RunContext, TrialResult, run_trial

DOMAIN = REPO / "catalogs" / "tau2_retail"
SUITE = DOMAIN / "suites" / "retail.jsonl"
MUTANTS = ("reference/mutant-drops-last-write", "reference/mutant-changes-write-argument")


def _call(name: str, **arguments: object) -> Call:
    return Call(1, 1, name, dict(arguments))


def _subset(ids: Iterable[str], suite: Suite | None = None) -> Suite:
    suite = suite or loaded_suite(SUITE)
    wanted = set(ids)
    return dataclasses.replace(suite, scenarios=tuple(
        s for s in suite.scenarios if s.scenario.id in wanted))


def _run(suite: Suite, models: Iterable[str]) -> list[TrialResult]:
    ctx = RunContext("tau2-action", "test")
    return [run_trial(spec, ctx) for spec in expand(
        [suite], [ModelConfig(m) for m in models], ["default"], ["chat"], repeats=1)]


def _action(result: TrialResult) -> bool | None:
    return next((c.passed for c in result.checks if c.check_id == "action"), None)


def test_a_call_matches_on_compare_args_or_on_the_calls_own_arguments() -> None:
    gold = ExpectedAction(name="cancel", arguments={"order_id": "#1", "reason": "no longer"})
    assert matches(gold, _call("cancel", order_id="#1", reason="no longer"))
    assert not matches(gold, _call("cancel", order_id="#1", reason="ordered by mistake"))
    assert not matches(gold, _call("refund", order_id="#1", reason="no longer"))
    # compare_args null: the call's own keys are compared (tau2's rule, kept)
    assert matches(gold, _call("cancel", order_id="#1"))
    assert matches(gold, _call("cancel"))
    assert not matches(gold, _call("cancel", order_id="#1", reason="no longer", extra=1))
    assert not matches(gold, Call(1, 1, "cancel", None))
    only_id = gold.model_copy(update={"compare_args": ["order_id"]})
    assert matches(only_id, _call("cancel", order_id="#1", reason="anything", extra=1))
    assert matches(gold.model_copy(update={"compare_args": []}), _call("cancel", x=2))


def test_the_check_names_each_unmatched_action_and_keeps_its_counted_flag() -> None:
    gold = [ExpectedAction(name="find", arguments={"q": "a"}),
            ExpectedAction(name="cancel", arguments={"order_id": "#1"})]
    refused = dataclasses.replace(_call("cancel", order_id="#1"), refused=True)
    held = action_check(gold, [_call("find", q="a"), refused], counted=False)
    assert (held.check_kind, held.passed, held.counted) == ("action", True, False)
    failed = action_check(gold, [_call("find", q="b")], counted=True)
    assert not failed.passed and failed.counted
    assert failed.detail == ('2 of 2 expected actions not made: find({"q": "a"}); '
                             'cancel({"order_id": "#1"})')


def test_gold_passes_action_and_a_mutant_fails_it_where_it_differs_never_passed() -> None:
    """Task 105's one write is refused in tau2 too: the database matches without it, but
    ACTION sees the call is missing. Tasks 24 and 57 have no gold actions: no check."""
    results = _run(_subset(["0", "105", "24"]), ["reference/golden", *MUTANTS])
    seen = {(r.trial.model.removeprefix("reference/"), r.trial.scenario_id):
            (_action(r), r.trial.passed) for r in results}
    assert seen == {
        ("golden", "0"): (True, True), ("golden", "105"): (True, True),
        ("golden", "24"): (None, True),
        ("mutant-drops-last-write", "0"): (False, False),
        ("mutant-drops-last-write", "105"): (False, True),  # the database still matches
        ("mutant-drops-last-write", "24"): (None, True),
        ("mutant-changes-write-argument", "0"): (False, False),
        ("mutant-changes-write-argument", "105"): (False, True),
        ("mutant-changes-write-argument", "24"): (None, True)}
    failed = next(r for r in results if r.trial.scenario_id == "105"
                  and r.trial.model == "reference/mutant-drops-last-write")
    action = next(c for c in failed.checks if c.check_id == "action")
    assert action.detail.startswith("1 of 1 expected actions not made: "
                                  "exchange_delivered_order_items({")
    assert failed.trial.first_violation_check is None  # not counted: no violation either


def test_action_in_the_reward_basis_makes_it_count_toward_passed() -> None:
    retail = _subset(["105"])
    scenario = retail.scenarios[0]
    strict = dataclasses.replace(retail, scenarios=(dataclasses.replace(
        scenario, scenario=scenario.scenario.model_copy(
            update={"reward_basis": ["database", "action"]})),))
    for suite, passed in ((retail, True), (strict, False)):
        result, = _run(suite, ["reference/mutant-drops-last-write"])
        assert (_action(result), result.trial.passed) == (False, passed)
        action = next(c for c in result.checks if c.check_id == "action")
        assert action.counted is (not passed)
    golden, = _run(strict, ["reference/golden"])
    assert golden.trial.passed is True


@pytest.mark.slow  # 114 tasks x 3 models
def test_action_on_the_whole_suite_golden_everywhere_mutants_wherever_a_write_changed(
) -> None:
    suite = loaded_suite(SUITE)
    domain = load_domain("tau2_retail", DOMAIN)
    writes = {s.scenario.id for s in suite.scenarios
              if any(domain.tool(a.name) is not None and domain.tool(a.name).kind == "write"
                     for a in s.scenario.expectations.actions)}
    results = _run(suite, ["reference/golden", *MUTANTS])
    for model in ("reference/golden", *MUTANTS):
        mine = [r for r in results if r.trial.model == model]
        assert len(mine) == 114
        failed = {r.trial.scenario_id for r in mine if _action(r) is False}
        assert failed == (set() if model == "reference/golden" else writes), model
        assert sum(_action(r) is None for r in mine) == 2  # tasks 24 and 57: no gold actions
    assert len(writes) == 104


def test_a_benchmarks_scenario_is_passed_by_its_reward_basis_our_other_checks_are_signals(
        ) -> None:
    from pipeline.models.client import ModelReply

    class Answers:
        """An agent that does nothing and answers in no language (punctuation only)."""

        def complete(self, *args: object, **kwargs: object) -> ModelReply:
            return ModelReply("...", (), "stop", 5, 5, None, None, 1.0)

    class User:
        """A simulated user who asks once, then stops."""

        said = 0

        def complete(self, *args: object, **kwargs: object) -> ModelReply:
            self.said += 1
            text = "I want a refund for my order." if self.said == 1 else "###STOP###"
            return ModelReply(text, (), "stop", 5, 5, None, None, 1.0)

    spec = next(iter(expand([_subset({"12"})], [ModelConfig("reference/golden")], ["default"],
                            ["chat"], repeats=1, user_model=ModelConfig("reference/golden"))))
    result = run_trial(spec, RunContext("tau2-basis", "test"), client=Answers(),
                       user_client=User())
    checks = {c.check_id: c for c in result.checks}
    language = checks["reply_language@1"]
    assert not language.passed and not language.counted  # run and recorded, not counted
    assert checks["database:tables"].passed and checks["database:tables"].counted
    assert result.trial.passed is True  # task 12 changes nothing: tau2's DB reward is 1
    assert result.trial.first_violation_check is None

    plain = loaded_suite(REPO / "catalogs" / "orders" / "suites" / "orders.jsonl")
    ours = next(iter(expand([plain], [ModelConfig("reference/golden")], ["default"], ["chat"],
                            repeats=1)))
    mine = run_trial(ours, RunContext("basis-none", "test"), client=Answers())
    assert all(c.counted for c in mine.checks) and mine.trial.passed is False
