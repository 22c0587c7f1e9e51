"""tau2-bench retail (issue 13): the import is reproducible and strict, our tools behave as
tau2's, the expected database is the golden replay, and reference/golden matches on all 114."""

from __future__ import annotations

import copy
import gzip
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, loaded_suite

from pipeline.catalog import load_domain
from pipeline.environment import expected_state
from pipeline.environment.database import changed_only, fresh_database, snapshot
from pipeline.environment.expected_state import golden_calls, replay_golden
from pipeline.environment.sandbox import Sandbox
from pipeline.interop.tau2_import import GENERATED, ImportFailed, check_task, import_tau2
from pipeline.scoring.communicate import said
from pipeline.scoring.database import table_diff
from pipeline.sweep.grid import ModelConfig, expand
from pipeline.trace import ToolCall
from pipeline.trial.run import RunContext, TrialResult, run_trial

SOURCE = Path("/work/shared/peers/tau2-retail")
DOMAIN = REPO / "catalogs" / "tau2_retail"
SUITE = DOMAIN / "suites" / "retail.jsonl"
RAISING = {"2": 1, "3": 1, "4": 1, "35": 1, "37": 1, "38": 1, "39": 1, "46": 2, "47": 2,
           "54": 1, "55": 1, "64": 1, "67": 2, "68": 1, "105": 1}
"""tau2 issue #499: the gold actions that raise, per task (18 in all)."""
needs_source = pytest.mark.skipif(not (SOURCE / "tasks.json").is_file(),
                                  reason="the peer's tau2 data is not on this machine")


def _tasks() -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = json.loads((SOURCE / "tasks.json").read_text("utf-8"))
    return tasks


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


@needs_source
@pytest.mark.slow  # imports 114 tasks and a 2.8 MB database
def test_the_import_reproduces_the_committed_catalog(tmp_path: Path) -> None:
    out = tmp_path / "tau2_retail"
    out.mkdir()
    for code in ("tools.json", "tools.py"):
        shutil.copy(DOMAIN / code, out / code)
    report = import_tau2(SOURCE, out)
    assert (report.tasks, report.gold_actions) == (114, 550)
    for name in GENERATED:
        assert _read(out / name) == _read(DOMAIN / name), f"{name} drifted: re-run the import"


def test_an_unknown_field_fails_the_import_with_file_task_and_field() -> None:
    task: dict[str, Any] = {"id": "7", "user_scenario": {"instructions": {}},
                            "evaluation_criteria": {"actions": [], "judge_rubric": "x"}}
    with pytest.raises(ImportFailed, match=r"^tasks\.json: 7: evaluation_criteria\."
                                           r"judge_rubric: "):
        check_task(task, None)
    task["evaluation_criteria"] = {"actions": [{"name": "get_order_details", "weight": 1}]}
    with pytest.raises(ImportFailed, match=r"^tasks\.json: 7: evaluation_criteria\.actions\.0"
                                           r"\.weight: "):
        check_task(task, None)


def test_a_known_field_we_cannot_run_or_an_unknown_tool_fails_the_import() -> None:
    task: dict[str, Any] = {"id": "9", "initial_state": {"initialization_actions": [{}]},
                            "evaluation_criteria": {"actions": []}}
    with pytest.raises(ImportFailed, match=r"^tasks\.json: 9: initial_state: not supported"):
        check_task(task, None)
    task = {"id": "9", "evaluation_criteria": {"actions": [{"name": "refund_everything"}]}}
    with pytest.raises(ImportFailed, match=r"actions\.0\.name: no tool 'refund_everything'"):
        check_task(task, {"get_order_details"})


@needs_source
def test_the_suite_keeps_ids_instructions_gold_actions_and_criteria() -> None:
    tasks = {t["id"]: t for t in _tasks()}
    scenarios = {s.scenario.id: s.scenario for s in loaded_suite(SUITE).scenarios}
    assert set(scenarios) == set(tasks)
    for task_id, scenario in scenarios.items():
        criteria = tasks[task_id]["evaluation_criteria"]
        calls = [a.model_dump()["call"] for a in scenario.turns[0].golden[:-1]]
        assert calls == [{"name": a["name"], "arguments": a["arguments"]}
                         for a in criteria["actions"]]
        assert scenario.nl_assertions == (criteria["nl_assertions"] or [])
        assert scenario.user is not None and tasks[task_id]["user_scenario"]["instructions"][
            "reason_for_call"] in scenario.user.instructions
        assert scenario.imported_from is not None and scenario.imported_from.task == tasks[
            task_id]
    assert {s.id for s in scenarios.values() if s.reward_basis == ["database"]} == {"33", "34"}


def test_the_importer_and_the_tools_serialize_documents_alike() -> None:
    from pipeline.interop.tau2_import import _dump

    tools = load_domain("tau2_retail", DOMAIN)
    dump = tools.write_tools["cancel_pending_order"].__globals__["dump"]
    doc = {"b": 1.5, "a": ["é", None], "c": {"z": 0.1}}
    assert _dump(doc) == dump(doc)


# --- the tools, against tau2's behaviour ------------------------------------------------------

def _sandbox() -> Sandbox:
    return Sandbox(load_domain("tau2_retail", DOMAIN))


def _call(sandbox: Sandbox, name: str, **arguments: Any) -> Any:
    return sandbox.call(name, json.dumps(arguments)).result


def _doc(sandbox: Sandbox, table: str, key: str) -> Any:
    assert sandbox.db is not None
    column = {"users": "user_id", "orders": "order_id", "products": "product_id"}[table]
    row = sandbox.db.execute(f"SELECT doc FROM {table} WHERE {column} = ?", (key,)).fetchone()
    return json.loads(row[0])


def _a_pending_order(sandbox: Sandbox, source: str) -> tuple[str, str]:
    """(order id, user id) of a pending order paid once with a ``source`` payment method."""
    assert sandbox.db is not None
    for key, text in sandbox.db.execute("SELECT order_id, doc FROM orders ORDER BY rowid"):
        order = json.loads(text)
        method = order["payment_history"][0]["payment_method_id"]
        if order["status"] == "pending" and method.startswith(source):
            return key, order["user_id"]
    raise AssertionError("no such order")


def test_a_refused_write_changes_nothing_and_answers_tau2s_message() -> None:
    sandbox = _sandbox()
    before = sandbox.snapshot()
    order_id, _ = _a_pending_order(sandbox, "credit_card")
    outcome = sandbox.call("cancel_pending_order",
                           json.dumps({"order_id": order_id, "reason": "too slow"}))
    assert outcome.result == {"error": "Invalid reason"} and outcome.effects == 0
    assert _call(sandbox, "get_order_details", order_id="#nope") == {"error": "Order not found"}
    assert sandbox.snapshot() == before


def test_cancelling_refunds_a_gift_card_at_once_rounded_to_cents() -> None:
    sandbox = _sandbox()
    order_id, user_id = _a_pending_order(sandbox, "gift_card")
    order = _doc(sandbox, "orders", order_id)
    payment = order["payment_history"][0]
    card = _doc(sandbox, "users", user_id)["payment_methods"][payment["payment_method_id"]]
    after = _call(sandbox, "cancel_pending_order", order_id=order_id, reason="no longer needed")
    assert after["status"] == "cancelled" and after["cancel_reason"] == "no longer needed"
    assert after["payment_history"][-1] == {**payment, "transaction_type": "refund"}
    balance = _doc(sandbox, "users", user_id)["payment_methods"][payment["payment_method_id"]]
    assert balance["balance"] == round(card["balance"] + payment["amount"], 2)
    again = _call(sandbox, "cancel_pending_order", order_id=order_id, reason="no longer needed")
    assert again == {"error": "Non-pending order cannot be cancelled"}


def test_modifying_items_gives_each_the_last_new_variants_price_and_options() -> None:
    """tau2's quirk (gold tasks 20, 21, 36, 37, 100 depend on it)."""
    sandbox = _sandbox()
    scenario = next(s.scenario for s in loaded_suite(SUITE).scenarios if s.scenario.id == "20")
    call = next(c for c in golden_calls(scenario) if c.call.name == "modify_pending_order_items")
    arguments = call.call.arguments
    assert len(arguments["new_item_ids"]) >= 2
    after = _call(sandbox, "modify_pending_order_items", **arguments)
    assert after["status"] == "pending (item modified)"
    changed = [i for i in after["items"] if i["item_id"] in arguments["new_item_ids"]]
    assert len({json.dumps([i["price"], i["options"]]) for i in changed}) == 1


def test_the_calculator_is_tau2s_without_eval() -> None:
    sandbox = _sandbox()
    assert _call(sandbox, "calculate", expression="(100 - 12.345) * 2") == "175.31"
    assert _call(sandbox, "calculate", expression="2 + 2") == "4.0"
    assert _call(sandbox, "calculate", expression="1 / 0") == {"error": "division by zero"}
    assert _call(sandbox, "calculate", expression="__import__('os')") == {
        "error": "Invalid characters in expression"}


def test_communicate_is_a_substring_test_with_commas_removed() -> None:
    assert said("1,093.34", ["It costs 1,093.34 dollars"]) is False  # theirs too
    assert said("1093.34", ["It costs $1,093.34."])
    assert said("Camera", ["a camera"]) and not said("camera", ["a cam era"])


# --- the expected database and the gold replay ------------------------------------------------

def test_the_changed_rows_compare_exactly_as_the_whole_database() -> None:
    domain = load_domain("tau2_retail", DOMAIN)
    before = snapshot(fresh_database(domain))
    after = copy.deepcopy(before)
    after["orders"]["rows"][3]["doc"] = after["orders"]["rows"][3]["doc"].replace(
        "pending", "cancelled")
    after["users"]["rows"].pop(7)
    cut = changed_only({"before": before, "after": after})
    assert table_diff(cut["before"], cut["after"]) == table_diff(before, after)
    assert len(table_diff(before, after)) == 2
    assert sum(len(t["rows"]) for t in cut["before"].values()) == 2


def _golden_results() -> Iterator[TrialResult]:
    suite = loaded_suite(SUITE)
    ctx = RunContext("tau2-golden", "test")
    for spec in expand([suite], [ModelConfig("reference/golden")], ["default"], ["chat"],
                       repeats=1):
        yield run_trial(spec, ctx)


def _refusals(result: TrialResult) -> list[str]:
    return [str(e.tool_error) for e in result.events
            if isinstance(e, ToolCall) and e.tool_error is not None]


@pytest.mark.slow
def test_gold_replay_matches_the_database_on_all_114_tasks() -> None:
    results = list(_golden_results())
    assert len(results) == 114
    failed = {r.trial.scenario_id: [c.detail for c in r.checks if not c.passed]
              for r in results if not r.trial.passed}
    assert failed == {}
    tables = {r.trial.scenario_id: next(c for c in r.checks if c.check_id == "database:tables")
              for r in results}
    assert all(c.passed for c in tables.values())
    raised = {r.trial.scenario_id: len(_refusals(r)) for r in results if _refusals(r)}
    assert raised == RAISING  # tau2 issue #499: the same 18 calls fail, no other
    assert _refusals(next(r for r in results if r.trial.scenario_id == "105")) == [
        "Insufficient gift card balance to pay for the price difference"]


def test_a_scenarios_trials_replay_its_golden_calls_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The models and repeats of one scenario share its expected database; another scenario,
    or one no longer among the kept ones, is replayed again, and gets the same database."""
    replays: list[str] = []
    real = expected_state.replay_golden

    def counted(domain: Any, scenario: Any) -> Any:
        replays.append(scenario.id)
        return real(domain, scenario)

    monkeypatch.setattr(expected_state, "replay_golden", counted)
    monkeypatch.setattr(expected_state, "_kept", type(expected_state._kept)())
    monkeypatch.setattr(expected_state, "KEPT_REPLAYS", 1)
    domain = load_domain("tau2_retail", DOMAIN)
    scenarios = {s.scenario.id: s.scenario for s in loaded_suite(SUITE).scenarios}
    first = expected_state.expected_database(domain, scenarios["0"])
    assert expected_state.expected_database(domain, scenarios["0"]) is first
    other = expected_state.expected_database(domain, scenarios["64"])
    again = expected_state.expected_database(domain, scenarios["0"])
    assert replays == ["0", "64", "0"]
    assert again == first and other != first
    assert table_diff(again, replay_golden(domain, scenarios["0"])[0]) == []


def test_a_failing_gold_write_is_missing_from_the_expected_state() -> None:
    """Task 105: its one gold write fails, so the expected database is the seed; task 64: the
    exchange of a pending order fails, the modification of its items that follows does not."""
    domain = load_domain("tau2_retail", DOMAIN)
    seed = snapshot(fresh_database(domain))
    scenarios = {s.scenario.id: s.scenario for s in loaded_suite(SUITE).scenarios}
    expected, outcomes = replay_golden(domain, scenarios["105"])
    assert table_diff(seed, expected) == [] and outcomes[0].error is not None
    expected, outcomes = replay_golden(domain, scenarios["64"])
    diff = table_diff(seed, expected)
    assert [(d["key"], json.loads(d["actual"])["status"]) for d in diff] == [
        (["#W7464385"], "pending (item modified)")]
    assert [o.error for o in outcomes if o.error] == ["Non-delivered order cannot be exchanged"]
    expected, _ = replay_golden(domain, scenarios["0"])
    diff = table_diff(seed, expected)
    assert [d["key"] for d in diff] == [["#W2378156"]]  # the exchange, nothing else


# --- mutation -----------------------------------------------------------------------------------

def test_the_mutants_a_task_must_catch_are_those_that_change_its_database() -> None:
    catches: dict[str, set[str]] = {}
    for loaded in loaded_suite(SUITE).scenarios:
        for catch in loaded.scenario.catches:
            assert (catch.check, catch.modes) == ("database:tables", ["chat"])
            catches.setdefault(catch.mutant, set()).add(loaded.scenario.id)
    assert len(catches["mutant-stray-write"]) == 114  # another customer's address
    # every task with a gold write that succeeds (not 105, whose one write fails)
    assert len(catches["mutant-drops-last-write"]) == 103 and "105" not in catches[
        "mutant-drops-last-write"] and "64" in catches["mutant-drops-last-write"]
    assert catches["mutant-changes-write-argument"] == catches["mutant-drops-last-write"]
    # a repeated write is refused (not pending, not delivered any more) or writes the same
    # address again: in tau2 it never changes the database, so it must pass everywhere
    assert "mutant-repeats-write" not in catches


@pytest.mark.slow
def test_verify_suite_golden_passes_and_each_mutant_fails_the_database_check_exactly_there(
) -> None:
    from pipeline.verify.mutants import verify

    cells = verify([loaded_suite(SUITE)], ["chat"], mutants=[
        "mutant-drops-last-write", "mutant-changes-write-argument", "mutant-stray-write",
        "mutant-repeats-write"])
    assert len(cells) == 114 * 5
    assert [(c.scenario_id, c.model, c.label()) for c in cells if not c.ok] == []
    caught = {c.model for c in cells if c.expected is not None}
    assert caught == {"reference/mutant-drops-last-write",
                      "reference/mutant-changes-write-argument", "reference/mutant-stray-write"}


def test_pass_hat_k_is_taus_estimator_averaged_over_scenarios() -> None:
    import duckdb

    from reports.transitions import pass_hat_k
    from warehouse.query import sql_text

    con = duckdb.connect(":memory:")
    con.execute("CREATE TABLE trials (run_id TEXT, model TEXT, prompt_id TEXT, memory_mode TEXT,"
                " scenario_id TEXT, status TEXT, passed BOOLEAN)")
    outcomes = {"a": [True, True, False, True], "b": [True, False, False, False],
                "c": [True, True, True, True]}
    for scenario, passes in outcomes.items():
        for passed in passes:
            con.execute("INSERT INTO trials VALUES ('r', 'm', 'p', 'chat', ?, 'complete', ?)",
                        [scenario, passed])
    con.execute("INSERT INTO trials VALUES ('r', 'm', 'p', 'chat', 'a', 'incomplete', NULL)")
    rows = con.execute(sql_text("pass_hat_k"), {"run_id": "r"}).fetchall()
    assert [r[3] for r in rows] == [1, 2, 3, 4]
    for row in rows:
        k = row[3]
        wanted = sum(pass_hat_k(sum(p), len(p), k) for p in outcomes.values()) / 3
        assert row[4] == 3 and row[5] == pytest.approx(wanted, abs=1e-6)


def test_the_expected_phase_lands_small_and_rescoring_gives_the_same_verdicts(
        tmp_path: Path) -> None:
    from pipeline.stored.rescore import rescore_run
    from pipeline.trial.run import tables_of
    from warehouse.query import run_sql
    from warehouse.writer import WarehouseWriter

    suite = loaded_suite(SUITE)
    ctx = RunContext("tau2-drop", "test")
    models = [ModelConfig("reference/golden"), ModelConfig("reference/mutant-drops-last-write")]
    results = [run_trial(spec, ctx) for spec in expand([suite], models, ["default"], ["chat"],
                                                        repeats=1)
               if spec.scenario.id in ("0", "105")]
    root = tmp_path / "warehouse"
    WarehouseWriter(root, "tau2-drop").write_batch(tables_of(results))
    rescore_run(root, "tau2-drop", "tau2-again", [suite])
    rows = run_sql(root, "select t.run_id, t.model, t.scenario_id, t.passed, c.detail "
                         "from trials t join checks c using (run_id, trial_id) where c.check_id = "
                         "'database:tables' order by t.model, t.scenario_id, t.run_id",
                   all_runs=True).rows
    verdicts: dict[tuple[str, str], set[tuple[bool, str]]] = {(r[1], r[2]): set() for r in rows}
    for row in rows:
        verdicts[(row[1], row[2])].add((row[3], row[4]))
    assert all(len(v) == 1 for v in verdicts.values())  # rescoring agrees, detail and all
    assert {k: next(iter(v))[0] for k, v in verdicts.items()} == {
        ("reference/golden", "0"): True, ("reference/golden", "105"): True,
        ("reference/mutant-drops-last-write", "0"): False,
        ("reference/mutant-drops-last-write", "105"): True}
    stored = run_sql(root, "select phase, count(*), sum(length(rows_json)) from snapshots where "
                           "run_id = 'tau2-drop' group by all order by all", all_runs=True).rows
    assert [r[:2] for r in stored] == [("after", 12), ("before", 12), ("expected", 12)]
    assert all(r[2] < 10_000 for r in stored)  # the changed rows only, not 2.8 MB a phase

    # a run written before trials had reward_basis: rescoring fills it from the scenario, so
    # tau2's combined reward is there for the rescored run
    from dataclasses import replace

    older = tmp_path / "older"
    WarehouseWriter(older, "tau2-drop").write_batch(tables_of(
        [replace(r, trial=replace(r.trial, reward_basis=None, nl_assertions=None))
         for r in results]))
    rescore_run(older, "tau2-drop", "tau2-again", [suite])
    reward = ("select model, scenario_id, tau2_reward from tau2_rewards where run_id = $r "
              "order by all")
    assert run_sql(older, reward, {"r": "tau2-drop"}).rows == []
    assert run_sql(older, reward, {"r": "tau2-again"}).rows == run_sql(
        root, reward, {"r": "tau2-again"}).rows != []


SCHEMA = Path(__file__).with_name("tau2_results.schema.json")
"""tau2's ``Results`` as JSON Schema, generated at tau2 a2c0247 (tau2_results.schema.NOTICE.md)."""


def _golden_warehouse(root: Path, run_id: str, models: tuple[str, ...] = ("reference/golden",),
                      ) -> None:
    """A run of ``models`` on tasks 0 and 105 (chat mode, one repeat) in ``root``."""
    from pipeline.trial.run import tables_of
    from warehouse.writer import WarehouseWriter

    ctx = RunContext(run_id, "test")
    results = [run_trial(spec, ctx) for spec in expand(
        [loaded_suite(SUITE)], [ModelConfig(m) for m in models], ["default"], ["chat"],
        repeats=1) if spec.scenario.id in ("0", "105")]
    WarehouseWriter(root, run_id).write_batch(tables_of(results))


@pytest.fixture(scope="module")
def golden_export_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tau2-export") / "warehouse"
    _golden_warehouse(root, "tau2-export")
    return root


def _index() -> Any:
    from pipeline.stored.trials import ScenarioIndex

    return ScenarioIndex([loaded_suite(SUITE)])


def test_the_tau2_export_holds_every_call_and_answer_in_their_message_format(
        golden_export_root: Path) -> None:
    from pipeline.interop.tau2_export import ALL, export_run

    suite = loaded_suite(SUITE)
    exported = export_run(golden_export_root, "tau2-export", ALL, _index())
    simulations = {s["task_id"]: s for s in exported["simulations"]}
    assert set(simulations) == {"0", "105"}
    assert {s["termination_reason"] for s in simulations.values()} == {"user_stop"}
    scenarios = {s.scenario.id: s.scenario for s in suite.scenarios}
    for task_id, simulation in simulations.items():
        roles = [m["role"] for m in simulation["messages"]]
        calls = [c for m in simulation["messages"] if m["role"] == "assistant"
                 for c in m["tool_calls"] or []]
        assert [(c["name"], c["arguments"]) for c in calls] == [
            (a.call.name, a.call.arguments) for a in golden_calls(scenarios[task_id])]
        assert roles.count("tool") == len(calls) and roles[0] == "user"
    tool = next(m for m in simulations["105"]["messages"] if m["role"] == "tool")
    assert (tool["error"], tool["content"]) == (
        True, "Error: Insufficient gift card balance to pay for the price difference")
    first = next(m for m in simulations["0"]["messages"] if m["role"] == "tool")
    assert first["content"] == "yusuf_rossi_9620"  # a string answer stays a plain string


def test_the_tau2_export_keeps_calls_that_never_ran_from_running_in_tau2s_replay() -> None:
    """tau2's evaluator re-executes every write of a trajectory whatever its recorded answer:
    a call the memory gate blocked, or whose arguments are not a JSON object, never reached
    our tools, so its exported arguments must make tau2's replay raise (a no-op there too)."""
    from pipeline.interop.tau2_export import NOT_EXECUTED, UNPARSED, messages
    from pipeline.trace import BLOCKED, AssistantMessage, ToolResult, UserMessage

    address = {"order_id": "#W1", "address1": "1 Main St", "address2": "", "city": "Austin",
               "state": "TX", "country": "USA", "zip": "78701"}
    calls = [  # (id, arguments as the model sent them, blocked, refusal)
        ("c0", json.dumps(address), True, f"{BLOCKED}permissions.x is False"),
        ("c1", '{"order_id": "#W1", "reason": ', False, "arguments are not valid JSON: x"),
        ("c2", '["#W1"]', False, "arguments must be a JSON object"),
        (None, json.dumps({"order_id": "#W1", "reason": "no longer needed"}), False, None)]
    events: list[dict[str, Any]] = [UserMessage(turn=1, content="hi").row(),
                                    AssistantMessage(turn=1, content=None).row()]
    for call_id, arguments, blocked, error in calls:
        events.append(ToolCall(turn=1, tool_name="cancel_pending_order", tool_call_id=call_id,
                               arguments=arguments, blocked=blocked, tool_error=error).row())
        events.append(ToolResult(turn=1, tool_name="cancel_pending_order",
                                 tool_call_id=call_id, result='{"status": "cancelled"}',
                                 tool_error=error, blocked=blocked).row())
    old = dict(events[2], blocked=None)  # a schema v1/v2 row: blocked is read from the error
    out = messages(events)
    assert [m["role"] for m in out] == ["user", "assistant", *["tool"] * 4]
    assert out[1]["tool_calls"] == [
        {"id": "c0", "name": "cancel_pending_order", "arguments": {NOT_EXECUTED: address},
         "requestor": "assistant"},
        {"id": "c1", "name": "cancel_pending_order",
         "arguments": {UNPARSED: '{"order_id": "#W1", "reason": '}, "requestor": "assistant"},
        {"id": "c2", "name": "cancel_pending_order", "arguments": {UNPARSED: '["#W1"]'},
         "requestor": "assistant"},
        {"id": "", "name": "cancel_pending_order",  # tau2's ToolCall.id is a string
         "arguments": {"order_id": "#W1", "reason": "no longer needed"},
         "requestor": "assistant"}]
    assert [(m["id"], m["error"]) for m in out[2:]] == [
        ("c0", True), ("c1", True), ("c2", True), ("", False)]
    assert out[2]["content"] == f"Error: {BLOCKED}permissions.x is False"
    assert messages([*events[:2], old])[1]["tool_calls"][0]["arguments"] == {
        NOT_EXECUTED: address}


# --- the export is a tau2 results file --------------------------------------------------------

def _validator() -> Any:
    import jsonschema

    schema = json.loads(SCHEMA.read_text("utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_export_is_a_results_file_tau2s_schema_accepts_and_needs_info_and_tasks(
        golden_export_root: Path) -> None:
    """tau2's ``Results`` (frozen JSON Schema of their pydantic model): ``tau2 evaluate-trajs``
    loads the export; without ``info`` (or ``tasks``) their loader refuses it."""
    from pipeline.interop.tau2_export import ALL, export_run

    exported = json.loads(json.dumps(export_run(golden_export_root, "tau2-export", ALL,
                                                 _index())))  # as the file holds it
    validator = _validator()
    assert list(validator.iter_errors(exported)) == []
    for required in ("info", "tasks"):
        cut = {k: v for k, v in exported.items() if k != required}
        assert [e.message for e in validator.iter_errors(cut)] == [
            f"'{required}' is a required property"]
    broken = copy.deepcopy(exported)
    del broken["info"]["environment_info"]["domain_name"]
    assert not validator.is_valid(broken)


def test_the_export_says_what_ran_and_carries_the_tasks_as_tau2_wrote_them(
        golden_export_root: Path) -> None:
    from pipeline.interop.tau2_export import ALL, export_run
    from pipeline.interop.tau2_info import NO_LIMIT

    exported = export_run(golden_export_root, "tau2-export", ALL, _index())
    source = {t["id"]: t for t in _tasks()} if (SOURCE / "tasks.json").is_file() else None
    scenarios = {s.scenario.id: s.scenario for s in loaded_suite(SUITE).scenarios}
    assert sorted(t["id"] for t in exported["tasks"]) == ["0", "105"]  # each task once
    for task in exported["tasks"]:
        imported = scenarios[task["id"]].imported_from
        assert imported is not None and task == imported.task
        if source is not None:
            assert task == source[task["id"]]  # tau2's own task, byte for byte as JSON
    assert {s["task_id"] for s in exported["simulations"]} == {"0", "105"}
    info = exported["info"]
    assert info["agent_info"] == {"implementation": "agentsweep/chat", "llm": "reference/golden",
                                  "llm_args": {"temperature": 0.0}}
    assert info["user_info"] == {"implementation": "agentsweep/fixed_turns", "llm": None,
                                 "llm_args": None}
    assert info["environment_info"] == {
        "domain_name": "retail", "policy": (DOMAIN / "prompts" / "default.md").read_text("utf-8")}
    assert (info["num_trials"], info["seed"]) == (1, None)  # no runs row: the trials' repeats
    assert (info["max_steps"], info["max_errors"]) == (NO_LIMIT, NO_LIMIT)
    assert info["git_commit"] == "test"  # the code_version the trials recorded
    assert exported["source"]["tau2_info_without_counterpart"] == ["max_steps", "max_errors"]


def test_the_export_reads_the_runs_recorded_repeats_and_user_simulator(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from pipeline.interop.tau2_export import ALL, export_run
    from pipeline.sweep.config import SweepConfig, config_json
    from warehouse.rows import RunRow
    from warehouse.writer import WarehouseWriter

    root = tmp_path / "warehouse"
    _golden_warehouse(root, "tau2-run")
    config = SweepConfig(warehouse=root, repeats=4, step_limit=12, user_max_turns=10,
                         user_model={"name": "local/default", "temperature": 0.5, "seed": 7})
    begun = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    WarehouseWriter(root, "tau2-run").write_batch({"runs": [RunRow(
        run_id="tau2-run", invocation_id="i1", started_at=begun, finished_at=begun,
        code_version="x", suite_ids=["retail"], suite_sha256s=["s"], models=["m"],
        memory_modes=["chat"], repeats=4, grid_size=2, trials_run=2, ray_address=None,
        argv="run", config_json=config_json(config)).as_dict()]})
    exported = export_run(root, "tau2-run", ALL, _index())
    assert exported["info"]["num_trials"] == 4 and exported["timestamp"] == begun.isoformat()
    assert exported["source"]["step_limit"] == 12 and exported["source"]["user_max_turns"] == 10
    # the trials themselves played fixed turns: the recorded user model is not theirs
    assert exported["info"]["user_info"]["llm"] is None


def test_the_export_refuses_what_tau2_cannot_hold_naming_the_run_and_scenario(
        tmp_path: Path) -> None:
    from pipeline.interop.tau2_export import ALL, Selection, export_run
    from pipeline.stored.trials import ScenarioIndex

    root = tmp_path / "warehouse"
    _golden_warehouse(root, "tau2-two", ("reference/golden", "reference/mutant-stray-write"))
    with pytest.raises(ValueError, match=r"run 'tau2-two' holds 2 agent configurations \("
                                         r"reference/golden tau2_retail/default chat .*--model"):
        export_run(root, "tau2-two", ALL, _index())
    one = export_run(root, "tau2-two", Selection(model="reference/mutant-stray-write"),
                     _index())
    assert {s["task_id"] for s in one["simulations"]} == {"0", "105"}
    assert one["info"]["agent_info"]["llm"] == "reference/mutant-stray-write"
    with pytest.raises(ValueError, match=r"^run 'tau2-two' has no trials with model 'nope'$"):
        export_run(root, "tau2-two", Selection(model="nope"), _index())
    with pytest.raises(ValueError, match=r"suite 'retail', scenario '(0|105)': not in the "
                                         r"catalog"):
        export_run(root, "tau2-two", Selection(model="reference/golden"), ScenarioIndex([]))


def test_tau2_info_takes_the_simulator_from_the_recorded_grid_and_repeat_0s_seed() -> None:
    from datetime import UTC, datetime

    from pipeline.interop.tau2_info import tau2_info

    now = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [{"model": "openai/x", "prompt_id": "tau2_retail/default", "memory_mode": "chat",
             "user_model": "local/default", "repeat": r, "seed": 7 + r, "code_version": "v1",
             "generation_params": json.dumps({"temperature": 0.2, "seed": 7 + r}),
             "started_at": now} for r in (1, 0)]
    config = {"user_model": {"name": "local/default", "temperature": 0.5, "seed": 3}}
    run = {"repeats": 2, "config_json": json.dumps(config), "started_at": now}
    info = tau2_info(rows, run, "the policy", "retail")
    assert info["user_info"] == {"implementation": "agentsweep/user_simulator",
                                 "llm": "local/default",
                                 "llm_args": {"temperature": 0.5, "seed": 3}}
    assert info["agent_info"]["llm_args"] == {"temperature": 0.2}
    assert (info["seed"], info["num_trials"], info["git_commit"]) == (7, 2, "v1")
    rows[0]["seed"] = 99  # the repeats disagree on repeat 0's seed: unknown, not guessed
    assert tau2_info(rows, None, "p", "retail")["seed"] is None
    assert tau2_info(rows, None, "p", "retail")["user_info"]["llm_args"] is None


def test_the_export_leaves_out_an_empty_reply_the_harness_nudged() -> None:
    from pipeline.interop.tau2_export import messages

    def event(kind: str, **values: Any) -> dict[str, Any]:
        return {"kind": kind, "content": None, "tool_call_id": None, "tool_name": None,
                "arguments": None, "result": None, "tool_error": None, "blocked": False,
                **values}

    events = [event("user_message", content="Где заказ?"),
              event("assistant_message"),
              event("tool_call", tool_call_id="c1", tool_name="get_order", arguments="{}"),
              event("tool_result", tool_call_id="c1", tool_name="get_order", result="{}"),
              event("assistant_message"),
              event("nudge", content="Now reply to the user in plain text."),
              event("assistant_message", content="В пути.")]
    out = messages(events)
    assert [(m["role"], m.get("content")) for m in out] == [
        ("user", "Где заказ?"), ("assistant", None), ("tool", "{}"), ("assistant", "В пути.")]
    assert out[1]["tool_calls"][0]["name"] == "get_order"
