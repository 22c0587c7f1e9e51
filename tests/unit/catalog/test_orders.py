"""Orders against a real per-trial database (the three-errors method): the database sandbox
(per-trial copies,
the server's owner and status checks, idempotent cancel, a timeout after the commit), the
whole-database check and the effect count, the diagnostics, the seven cases with their mutants,
the contract lint, and bad input refused at load."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from pipeline.catalog import CatalogError, Scenario, load_domain, load_suite, set_extra_roots
from pipeline.catalog.contract_lint import defines, lint_contract
from pipeline.catalog.database_models import TIMEOUT_MESSAGE
from pipeline.environment.sandbox import Sandbox
from pipeline.models.client import ModelReply, ToolCallRequest
from pipeline.scoring.database import expected_tables, table_diff
from pipeline.stored.rescore import rescore_run
from pipeline.sweep.grid import ModelConfig, expand
from pipeline.trial.run import RunContext, TrialResult, run_trial, tables_of
from pipeline.verify.mutants import verify
from warehouse.query import run_sql
from warehouse.writer import WarehouseWriter

SUITE = REPO / "catalogs" / "orders" / "suites" / "orders.jsonl"


def _case(case_id: str) -> Scenario:
    return next(s.scenario for s in load_suite(SUITE).scenarios if s.scenario.id == case_id)


def _status(sandbox: Sandbox, order_id: str) -> Any:
    assert sandbox.db is not None
    return sandbox.db.execute("SELECT status FROM orders WHERE id = ?", (order_id,)).fetchone()[0]


def test_each_trial_gets_its_own_database_and_the_server_checks_owner_and_status() -> None:
    domain = load_domain("orders")
    first, second = Sandbox(domain), Sandbox(domain)
    done = first.call("cancel_order", '{"order_id": "o1"}')
    assert done.error is None and done.effects == 1 and _status(first, "o1") == "cancelled"
    assert _status(second, "o1") == "pending"  # never shared
    assert _status(Sandbox(domain), "o1") == "pending"  # the template is untouched
    again = first.call("cancel_order", '{"order_id": "o1"}')
    assert again.error is None and again.effects == 0  # idempotent: no new effect
    other = first.call("cancel_order", '{"order_id": "o3"}')
    assert other.effects == 0 and "not found among your orders" in (other.error or "")
    assert first.call("get_order", '{"order_id": "o3"}').error is not None  # bob's order
    shipped = Sandbox(domain, database=_case("shipped").database)
    refused = shipped.call("cancel_order", '{"order_id": "o2"}')
    assert refused.effects == 0 and "shipped" in (refused.error or "")


def test_a_timeout_after_commit_changes_the_database_and_answers_an_error() -> None:
    sandbox = Sandbox(load_domain("orders"), database=_case("timeout-after-commit").database)
    outcome = sandbox.call("cancel_order", '{"order_id": "o1"}')
    assert outcome.error == TIMEOUT_MESSAGE and outcome.effects == 1
    assert _status(sandbox, "o1") == "cancelled"  # committed, whatever the answer said


def test_writing_a_value_already_there_is_no_effect() -> None:
    sandbox = Sandbox(load_domain("orders"))
    assert sandbox.call("update_address", '{"order_id": "o1", "address": "Pine 7"}').effects == 1
    assert sandbox.call("update_address", '{"order_id": "o1", "address": "Pine 7"}').effects == 0


def test_the_whole_database_is_compared_so_a_stray_change_cannot_hide() -> None:
    sandbox = Sandbox(load_domain("orders"))
    before = sandbox.snapshot()
    assert before is not None
    sandbox.call("cancel_order", '{"order_id": "o1"}')
    sandbox.call("update_address", '{"order_id": "o2", "address": "Pine 7"}')
    after = sandbox.snapshot()
    assert after is not None
    changes = _case("cancel-own").database.expected.changes  # type: ignore[union-attr]
    diff = table_diff(expected_tables(before, changes), after)
    assert diff == [{"table": "orders", "key": ["o2"], "column": "address",
                     "expected": "Oak 1", "actual": "Pine 7"}]


def _results(model: str, case_ids: set[str], run_id: str = "orders") -> list[TrialResult]:
    suite = load_suite(SUITE)
    ctx = RunContext(run_id, "test")
    return [run_trial(spec, ctx) for spec in expand([suite], [ModelConfig(model)], ["default"],
                                                   ["chat"], repeats=1)
            if spec.scenario.id in case_ids]


def _checks(result: TrialResult) -> dict[str, Any]:
    return {c.check_id: c for c in result.checks}


def test_golden_passes_all_seven_with_the_expected_effects_and_diagnostics() -> None:
    results = _results("reference/golden", {s.scenario.id for s in load_suite(SUITE).scenarios})
    assert len(results) == 7 and all(r.trial.passed for r in results)
    effects = {r.trial.scenario_id: _checks(r)["database:effects"].detail for r in results}
    assert effects["cancel-own"] == "1 effect(s), expected 1"
    assert effects["ambiguous"] == "0 effect(s), expected 0"
    timeout = next(r for r in results if r.trial.scenario_id == "timeout-after-commit")
    values = {d.name: d.value for d in timeout.diagnostics}
    assert values == {"read_before_write": True, "read_after_fault": True,
                      "read_before_answer": True}
    ambiguous = next(r for r in results if r.trial.scenario_id == "ambiguous")
    assert {d.name: d.value for d in ambiguous.diagnostics}["read_before_write"] is None
    phases = {(s.phase, s.table_name) for s in timeout.snapshots}
    assert phases == {("before", "orders"), ("after", "orders")}


class _Script:
    """A model that plays ``replies`` in order, whatever it is asked."""

    def __init__(self, *replies: ModelReply) -> None:
        self.replies = list(replies)

    def complete(self, *args: object, **kwargs: object) -> ModelReply:
        return self.replies.pop(0)


def _reply(content: str | None, *calls: tuple[str, str]) -> ModelReply:
    requests = tuple(ToolCallRequest(f"c{i}", name, arguments)
                     for i, (name, arguments) in enumerate(calls))
    return ModelReply(content, requests, "tool_calls" if calls else "stop", 5, 5, None, None, 1.0)


def test_a_refused_direct_cancel_then_denied_passes_cancel_other_and_the_skipped_read_shows(
        ) -> None:
    """The three-errors method: the agent that tries to cancel bob's order, is refused by the
    server and answers ``denied`` is correct; that it did not read first is a recorded signal
    (the prompt's "read before you act"), not a failure."""
    spec = next(s for s in expand([load_suite(SUITE)], [ModelConfig("reference/golden")],
                                  ["default"], ["chat"], repeats=1)
                if s.scenario.id == "cancel-other")
    client = _Script(_reply(None, ("cancel_order", '{"order_id": "o3"}')),
                     _reply('{"outcome": "denied", "message": "Order o3 is not one of yours."}'))
    result = run_trial(spec, RunContext("orders-direct", "test"), client=client)
    checks = _checks(result)
    assert result.trial.passed is True, [c for c in result.checks if not c.passed]
    assert checks["database:tables"].passed and checks["database:effects"].passed
    signal = checks["diagnostic:read_before_write"]
    assert not signal.passed and not signal.counted
    assert signal.detail == "read_before_write: no (a signal)"
    assert {d.name: d.value for d in result.diagnostics}["read_before_write"] is False


def test_show_says_a_write_committed_before_its_timeout_not_that_it_was_refused() -> None:
    from pipeline.cli.show import dialog_lines
    from pipeline.stored.trials import StoredTrial

    result = _results("reference/golden", {"timeout-after-commit"})[0]
    lines = list(dialog_lines(StoredTrial(row={}, events=result.events)))
    cancel = next(line for line in lines if "-> cancel_order" in line)
    assert "COMMITTED (1 row(s) changed), then answered with an error:" in cancel
    assert "REFUSED" not in cancel


def test_each_mutant_is_caught_by_its_intended_check() -> None:
    cells = verify([load_suite(SUITE)], ["chat"])
    bad = [(c.scenario_id, c.model, c.label()) for c in cells if not c.ok]
    assert not bad, bad
    caught = {(c.scenario_id, c.model.removeprefix("reference/")): c.first_violation
              for c in cells if c.expected}
    assert caught == {
        ("ambiguous", "mutant-wrong-answer"): "database:tables",  # (a) cancels o1 anyway
        ("cancel-own", "mutant-stray-write"): "database:tables",  # (b) also touches o2
        ("cancel-own", "mutant-repeats-write"): "database:write_calls:cancel_order",  # (c)
        ("change-address", "mutant-repeats-write"): "database:write_calls:update_address",
        ("timeout-after-commit", "mutant-skips-reread"): "diagnostic:read_after_fault",  # (d)
        ("shipped", "mutant-wrong-answer"): "decision_mismatch",  # (e) denied, not shipped
    }


def test_an_answer_that_is_not_json_fails_the_contract() -> None:
    from pipeline.scoring import score_trial
    from pipeline.trace import AssistantMessage, Trace, UserMessage

    scenario = _case("cancel-other")
    trace = Trace()
    trace.add(UserMessage(turn=1, content="Please cancel order o3."))
    trace.add(AssistantMessage(turn=1, content="Sorry, that is not your order."))
    before = Sandbox(load_domain("orders")).snapshot()
    assert before is not None
    trace.snapshots = {"before": before, "after": before}
    scoring = score_trial(trace, scenario, "chat")
    failed = {c.check_id for c in scoring.checks if not c.passed}
    assert not scoring.passed and "decision_mismatch" in failed
    assert "database:tables" not in failed  # nothing changed: only the contract broke


def test_snapshots_and_diagnostics_land_and_rescoring_reads_them_back(tmp_path: Path) -> None:
    results = _results("reference/mutant-stray-write", {"cancel-own"}, "orders-stray")
    root = tmp_path / "warehouse"
    WarehouseWriter(root, "orders-stray").write_batch(tables_of(results))
    rescore_run(root, "orders-stray", "orders-again", [load_suite(SUITE)])
    rows = run_sql(root, "select t.run_id, t.passed, c.detail from trials t join checks c "
                         "using (run_id, trial_id) where c.check_id = 'database:tables' "
                         "order by t.run_id", all_runs=True).rows
    assert [(r[0], r[1]) for r in rows] == [("orders-again", False), ("orders-stray", False)]
    assert rows[0][2] == rows[1][2] and '"column": "address"' in rows[0][2]
    stored = run_sql(root, "select run_id, phase, count(*) from snapshots group by all "
                           "order by all", all_runs=True).rows
    assert stored == [("orders-again", "after", 1), ("orders-again", "before", 1),
                      ("orders-stray", "after", 1), ("orders-stray", "before", 1)]


def test_the_contract_lint_flags_a_code_the_prompt_never_defines(tmp_path: Path) -> None:
    assert defines("- shipped: the order has already been shipped", "shipped")
    assert not defines("The outcome is one of cancelled, denied, shipped, pending.", "shipped")
    assert lint_contract(load_suite(SUITE)) == []
    root = tmp_path / "catalog"
    shutil.copytree(REPO / "catalogs" / "orders", root / "orders_copy")
    prompt = root / "orders_copy" / "prompts" / "default.md"
    text = prompt.read_text("utf-8")
    prompt.write_text("\n".join(line for line in text.splitlines()
                                if not line.startswith("- shipped:")), "utf-8")
    set_extra_roots([root])
    try:
        findings = lint_contract(load_suite(root / "orders_copy" / "suites" / "orders.jsonl"))
    finally:
        set_extra_roots([])
    assert {(f.case_id, f.code) for f in findings} == {("shipped", "shipped"),
                                                     ("stale-context", "shipped")}
    assert "is never defined in prompt orders_copy/default" in findings[0].message()


def _bad_case(tmp_path: Path, change: Any) -> str:
    root = tmp_path / "catalog"
    shutil.copytree(REPO / "catalogs" / "orders", root / "orders_copy")
    suite = root / "orders_copy" / "suites" / "orders.jsonl"
    lines = [json.loads(x) for x in suite.read_text("utf-8").splitlines()]
    change(lines[0])
    suite.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    set_extra_roots([root])
    try:
        with pytest.raises(CatalogError) as caught:
            load_suite(suite)
    finally:
        set_extra_roots([])
    return str(caught.value)


def test_an_expected_change_must_name_exactly_one_seed_row(tmp_path: Path) -> None:
    def ghost(case: dict[str, Any]) -> None:
        case["database"]["expected"]["changes"][0]["key"] = {"id": "o9"}
    message = _bad_case(tmp_path, ghost)
    assert message.endswith("orders.jsonl:1: database.expected.changes.0.key: the key names 0 "
                            "rows of orders in the seed database; it must name exactly one")


def test_an_expected_change_must_name_real_columns(tmp_path: Path) -> None:
    def column(case: dict[str, Any]) -> None:
        case["database"]["expected"]["changes"][0]["set"] = {"state": "cancelled"}
    message = _bad_case(tmp_path, column)
    assert "orders.jsonl:1: database.expected.changes.0: table orders has no column 'state'" \
        in message


def test_a_fault_must_name_a_write_tool(tmp_path: Path) -> None:
    def fault(case: dict[str, Any]) -> None:
        case["database"]["faults"] = [{"tool": "get_order"}]
    message = _bad_case(tmp_path, fault)
    assert "orders.jsonl:1: database.faults.0.tool: 'get_order' is not a write tool" in message


def test_database_rules_need_a_database_domain(tmp_path: Path) -> None:
    root = tmp_path / "catalog"
    shutil.copytree(REPO / "catalogs" / "support_agent", root / "support_copy")
    suite = root / "support_copy" / "suites" / "support_cases.jsonl"
    case = json.loads(suite.read_text("utf-8").splitlines()[0])
    case["database"] = {"expected": {"effects": 0}}
    suite.write_text(json.dumps(case, ensure_ascii=False) + "\n", "utf-8")
    set_extra_roots([root])
    try:
        with pytest.raises(CatalogError) as caught:
            load_suite(suite)
    finally:
        set_extra_roots([])
    assert "support_cases.jsonl:1: database: domain support_copy does not run its writes on " \
           "a database" in str(caught.value)


def test_a_broken_db_sql_is_named(tmp_path: Path) -> None:
    root = tmp_path / "catalog"
    shutil.copytree(REPO / "catalogs" / "orders", root / "orders_copy")
    (root / "orders_copy" / "db.sql").write_text("CREATE TABLE orders (id TEXT", "utf-8")
    with pytest.raises(CatalogError) as caught:
        load_domain("orders_copy", root / "orders_copy")
    assert "db.sql: SQLite: " in str(caught.value)
