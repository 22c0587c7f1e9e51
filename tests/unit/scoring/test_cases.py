"""Regression cases (the regression-suite method): the cases suite loads into one-turn scenarios,
golden passes
every case, each rule code catches its defect, and a bad case line names file, line and field."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

import pipeline.scoring.cases as cases
from pipeline.catalog import CatalogError, load_suite
from pipeline.catalog.case_models import CaseExpected, CaseRules
from pipeline.scoring.cases import case_checks, reply_json
from pipeline.scoring.journal import Journal
from pipeline.trace import AssistantMessage, Event, ToolCall, UserMessage
from pipeline.verify.mutants import verify

CASES = REPO / "catalogs" / "support_agent" / "suites" / "support_cases.jsonl"
RISKS = {"happy-path", "incomplete", "ambiguous", "long-context", "contradictory-context",
         "tool-empty", "tool-error", "confirmation", "data-boundary", "regression"}


def test_the_support_suite_is_a_cases_suite_covering_the_seeds_risks() -> None:
    suite = load_suite(CASES)
    assert suite.kind == "cases" and len(suite.scenarios) >= 15
    tags = {tag for loaded in suite.scenarios for tag in loaded.scenario.tags}
    assert RISKS <= tags, RISKS - tags
    scenario = suite.scenarios[0].scenario
    assert scenario.scenario_class == "regression" and len(scenario.turns) == 1
    assert scenario.case is not None and scenario.critical
    assert '"customer_id": "C-100"' in scenario.turns[0].user
    assert any(not s.scenario.critical for s in suite.scenarios)


@pytest.mark.parametrize("tools", ["mock", "sandbox"])
def test_golden_passes_every_case_and_each_wrong_answer_is_caught(tools: str) -> None:
    cells = verify([load_suite(CASES)], ["chat"], mutants=["mutant-wrong-answer"],
                   tools="mock" if tools == "mock" else "sandbox")
    bad = [(c.scenario_id, c.model, c.label()) for c in cells if not c.ok]
    assert not bad, bad
    golden = [c for c in cells if c.model == "reference/golden"]
    assert len(golden) >= 15 and all(c.passed for c in golden)
    caught = {(c.first_violation or "").split(":")[0] for c in cells if c.expected}
    assert {"decision_mismatch", "missing_required", "contains_forbidden", "schema"} <= caught


def _passing(result: Any) -> Any:
    if isinstance(result, list):
        return [_passing(r) for r in result]
    return dataclasses.replace(result, passed=True, turn=None, step=None)


RULE_SWITCHES: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "decision_mismatch": lambda mp: mp.setattr(
        cases, "decision_check", lambda *a, _f=cases.decision_check: _passing(_f(*a))),
    "missing_required:": lambda mp: mp.setattr(cases, "_contains", lambda text, term: True),
    "contains_forbidden:": lambda mp: mp.setattr(cases, "_says", lambda text, term: False),
    "schema:": lambda mp: mp.setattr(
        cases, "schema_checks", lambda *a, _f=cases.schema_checks: _passing(_f(*a))),
}


@pytest.mark.parametrize("prefix", sorted(RULE_SWITCHES))
def test_switching_a_rule_off_fails_the_verification(prefix: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    suite = load_suite(CASES)
    suite = dataclasses.replace(suite, scenarios=tuple(
        s for s in suite.scenarios if any(c.check.startswith(prefix)
                                          for c in s.scenario.catches)))
    assert suite.scenarios, prefix
    RULE_SWITCHES[prefix](monkeypatch)
    cells = verify([suite], ["chat"], mutants=["mutant-wrong-answer"], tools="mock")
    wrong = [c for c in cells if not c.ok]
    assert any(c.expected and c.expected.startswith(prefix) for c in wrong), prefix


def _journal(reply: str, calls: tuple[tuple[str, dict[str, Any]], ...] = ()) -> Journal:
    events: list[Event] = [UserMessage(turn=1, step=0, content="запрос")]
    for step, (name, arguments) in enumerate(calls, start=1):
        events.append(ToolCall(turn=1, step=step, tool_name=name, tool_call_id=f"c{step}",
                               arguments=json.dumps(arguments, ensure_ascii=False),
                               intercepted=False, state_revision=1))
    events.append(AssistantMessage(turn=1, step=len(calls) + 1, content=reply))
    return Journal.of(events)


def _failed(reply: str, expected: dict[str, Any], schema: dict[str, Any] | None = None,
            calls: tuple[tuple[str, dict[str, Any]], ...] = ()) -> list[str]:
    rules = CaseRules(expected=CaseExpected.model_validate(expected), schema_document=schema)
    return [c.check_id for c in case_checks(_journal(reply, calls), rules) if not c.passed]


def _reply(decision: str, message: str, **extra: Any) -> str:
    return json.dumps({"decision": decision, "message": message, **extra}, ensure_ascii=False)


def test_each_rule_code_fails_on_its_defect_and_passes_without_it() -> None:
    expected = {"decision": "ask_clarification", "required_terms": ["Кому"],
                "forbidden_terms": ["успешно", {"claim": "отправлено"}]}
    assert _failed(_reply("ask_clarification", "кому отправить отчёт?"), expected) == []
    assert _failed(_reply("answer", "Кому отправить?"), expected) == ["decision_mismatch"]
    assert _failed(_reply("ask_clarification", "Куда отправить?"), expected) == [
        "missing_required:Кому"]
    assert _failed(_reply("ask_clarification", "Кому? УСПЕШНО."), expected) == [
        "contains_forbidden:успешно"]
    assert _failed(_reply("ask_clarification", "Кому? Отчёт отправлено."), expected) == [
        "contains_forbidden:отправлено"]


def test_a_forbidden_claim_is_negation_aware_and_a_plain_term_is_not() -> None:
    expected = {"decision": "answer", "forbidden_terms": [{"claim": "отправлено"}, "отменено"]}
    for message in ("Ничего не отправлено.", "Если будет отправлено, сообщу.",
                    "Было ли отправлено письмо?"):
        assert _failed(_reply("answer", message), expected) == [], message
    assert _failed(_reply("answer", "Письмо отправлено, но не всё."), expected) == [
        "contains_forbidden:отправлено"]
    assert _failed(_reply("answer", "Ничего не отменено."), expected) == [
        "contains_forbidden:отменено"]


def test_schema_failures_are_named_by_json_pointer() -> None:
    schema = {"type": "object", "required": ["decision", "order"],
              "properties": {"order": {"type": "object", "required": ["id"], "properties": {
                  "id": {"type": "string"}, "total/rub": {"type": "integer"}}}}}
    expected = {"decision": "answer"}
    good = _reply("answer", "ok", order={"id": "A-1", "total/rub": 5})
    assert _failed(good, expected, schema) == []
    bad = _reply("answer", "ok", order={"total/rub": "5"})
    assert _failed(bad, expected, schema) == ["schema:/order", "schema:/order/total~1rub"]
    assert _failed("not json", {"decision": "answer"}, schema) == ["decision_mismatch",
                                                                   "schema:"]


def test_the_decision_comes_from_a_fenced_json_reply_or_a_named_tool_call() -> None:
    assert reply_json('```json\n{"decision": "refuse"}\n```') == {"decision": "refuse"}
    assert _failed('```json\n{"decision": "refuse", "message": "нет"}\n```',
                   {"decision": "refuse"}) == []
    assert _failed('Ответ: {"decision": "refuse"}', {"decision": "refuse"}) == [
        "decision_mismatch"]
    by_tool = {"decision": "escalate", "decision_from": {"tool": "record_resolution"}}
    call = (("record_resolution", {"decision": "escalate", "note": "x"}),)
    assert _failed("Передал специалисту.", by_tool, calls=call) == []
    assert _failed("Передал специалисту.", by_tool) == ["decision_mismatch"]
    wrong = (("record_resolution", {"decision": "answer", "note": "x"}),)
    assert _failed("Передал.", by_tool, calls=wrong) == ["decision_mismatch"]


def test_text_rules_are_casefolded_and_read_the_json_strings() -> None:
    expected = {"decision": "answer", "required_terms": ["ДОСТАВКА"],
                "forbidden_terms": ["message"]}
    assert _failed(_reply("answer", "Доставка завтра"), expected) == []
    assert _failed("доставка будет завтра", {**expected, "decision": "x"}) == [
        "decision_mismatch"]


GOOD_CASE = {"id": "c1", "version": 1, "input": {"message": "Где мой заказ A-1002?"},
             "context": {"tool_results": [{"tool": "lookup_order",
                                           "arguments": {"order_id": "A-1002"},
                                           "result": {"status": "in_transit"}}]},
             "expected": {"decision": "answer", "required_terms": ["в пути"],
                          "json_schema": "reply.schema.json"},
             "golden": [{"call": {"name": "lookup_order", "arguments": {"order_id": "A-1002"}}},
                        {"reply": "{\"decision\": \"answer\", \"message\": \"в пути\"}"}]}


def _variant(path: str, value: Any) -> dict[str, Any]:
    case = json.loads(json.dumps(GOOD_CASE))
    *parents, last = path.split(".")
    node: Any = case
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if value is _DROP:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return case


_DROP = object()
BAD_CASES = [
    ("expected.oops", 1, "expected.oops", "unknown key (known: "),
    ("expected.decision", _DROP, "expected", "'decision' is a required property"),
    ("context.tool_results.0.tool", "send_mail", "context.tool_results.0.tool",
     "unknown tool 'send_mail'"),
    ("context.tool_results.0.arguments", {"order_id": 7}, "context.tool_results.0.arguments"
     ".order_id", "is not of type 'string'"),
    ("golden.0.call.name", "nope", "golden.0.call.name", "unknown tool 'nope'"),
    ("golden", [{"call": {"name": "lookup_order", "arguments": {"order_id": "A-1002"}}}],
     "golden", "exactly one reply"),
    ("expected.json_schema", "missing.json", "expected.json_schema", "no such file"),
    ("expected.decision_from", {"tool": "lookup_order"}, "expected.decision_from.argument",
     "'decision' is not a parameter of lookup_order"),
    ("expected.required_terms", ["в пути", "В ПУТИ"], "expected", "listed twice"),
    ("mutation", {"false_claim": {"turn": 2, "reply": "x"}}, "mutation.false_claim.turn",
     "a case has one turn"),
    ("critical", "yes", "critical", "is not of type 'boolean'"),
]


@pytest.mark.parametrize(("path", "value", "field", "words"), BAD_CASES)
def test_a_bad_case_line_names_file_line_and_field(tmp_path: Path, path: str, value: Any,
                                                   field: str, words: str) -> None:
    suites = tmp_path / "support_agent" / "suites"
    suites.mkdir(parents=True)
    (suites / "reply.schema.json").write_text('{"type": "object"}', "utf-8")
    good = json.dumps(GOOD_CASE, ensure_ascii=False)
    bad = json.dumps({**_variant(path, value), "id": "c2"}, ensure_ascii=False)
    file = suites / "cases.jsonl"
    file.write_text(f"// a comment\n{good}\n\n{bad}\n", "utf-8")
    with pytest.raises(CatalogError) as caught:
        load_suite(file)
    error = caught.value
    assert (error.path, error.line, error.field) == (str(file), 4, field), str(error)
    assert words in error.message, str(error)


def test_a_scenario_line_in_a_cases_suite_and_a_broken_schema_file_are_refused(
        tmp_path: Path) -> None:
    suites = tmp_path / "support_agent" / "suites"
    suites.mkdir(parents=True)
    (suites / "reply.schema.json").write_text('{"type": 5}', "utf-8")
    scenario = REPO / "catalogs" / "meeting_rooms" / "suites" / "intent_change.jsonl"
    file = suites / "cases.jsonl"
    file.write_text(json.dumps(GOOD_CASE) + "\n", "utf-8")
    with pytest.raises(CatalogError, match="not a valid JSON Schema") as caught:
        load_suite(file)
    assert caught.value.line == 1 and caught.value.field == "expected.json_schema"
    (suites / "reply.schema.json").write_text('{"type": "object"}', "utf-8")
    first_scenario = scenario.read_text("utf-8").splitlines()[0]
    file.write_text(json.dumps(GOOD_CASE) + "\n" + first_scenario + "\n", "utf-8")
    with pytest.raises(CatalogError, match="this is a cases suite") as caught:
        load_suite(file)
    assert caught.value.line == 2


def test_the_support_domain_claims_catch_a_cancellation_that_never_happened() -> None:
    from pipeline.catalog import load_domain
    from pipeline.scoring.claims import said_vs_done

    patterns = load_domain("support_agent").claim_patterns
    said = [(1, 2, "Заказ A-1002 отменён."), (1, 2, "Деньги возвращены на карту."),
            (1, 2, "Отчёт за ноябрь отправлен.")]
    assert [v.tool for v in said_vs_done(said, (), patterns)] == [
        "cancel_order", "refund_order", "send_report"]
    fine = [(1, 2, "Заказ A-1002 будет отменён после вашего подтверждения."),
            (1, 2, "Отчёт не отправлен: сервис не ответил."),
            (1, 2, "Отменить заказ A-1002?")]
    assert said_vs_done(fine, (), patterns) == []
