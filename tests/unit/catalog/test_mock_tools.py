"""Mock-tools mode (--tools mock): every tool answers from the case's recordings, a call with
none is an agent-visible tool error recorded like a sandbox refusal, and no tool code can run."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from conftest import REPO

from pipeline.catalog import load_domain, load_suite
from pipeline.catalog.case_models import RecordedResult
from pipeline.environment.sandbox import NO_RECORDING, Sandbox
from pipeline.sweep.grid import ModelConfig, expand
from pipeline.trace import ToolCall
from pipeline.trial.run import RunContext, run_trial

CASES = REPO / "catalogs" / "support_agent" / "suites" / "support_cases.jsonl"
RECORDED = (RecordedResult(tool="lookup_order", arguments={"order_id": "A-1002"},
                           result={"status": "recorded"}),
            RecordedResult(tool="cancel_order", result={"cancelled": "recorded"}))


def _no_code_domain() -> object:
    """The support domain with no tool code at all: mock mode must not need any."""
    return dataclasses.replace(load_domain("support_agent"), read_tools={})


def test_mock_answers_every_tool_from_the_recordings_and_runs_no_tool_code() -> None:
    sandbox = Sandbox(_no_code_domain(), "mock", RECORDED)  # type: ignore[arg-type]
    read = sandbox.call("lookup_order", json.dumps({"order_id": "A-1002"}))
    assert (read.result, read.error, read.intercepted) == ({"status": "recorded"}, None, False)
    write = sandbox.call("cancel_order", json.dumps({"order_id": "A-9999"}))
    assert (write.result, write.intercepted) == ({"cancelled": "recorded"}, True)
    assert [e.tool for e in sandbox.journal] == ["cancel_order"]
    assert sandbox.state == dict(load_domain("support_agent").seed_state)


def test_a_call_without_recording_is_a_tool_error_and_bad_calls_are_still_refused() -> None:
    sandbox = Sandbox(load_domain("support_agent"), "mock", RECORDED)
    other = sandbox.call("lookup_order", json.dumps({"order_id": "A-1001"}))
    assert other.error is not None and NO_RECORDING in other.error
    assert other.result == {"error": other.error}
    unrecorded = sandbox.call("search_kb", json.dumps({"query": "возврат"}))
    assert unrecorded.error is not None and NO_RECORDING in unrecorded.error
    invalid = sandbox.call("lookup_order", json.dumps({"order_id": 5}))
    assert invalid.error is not None and NO_RECORDING not in invalid.error
    assert sandbox.journal == []


def test_a_trial_in_mock_mode_records_the_missing_recording_as_a_tool_error() -> None:
    suite = load_suite(CASES)
    suite = dataclasses.replace(suite, scenarios=tuple(
        s for s in suite.scenarios if s.scenario.id == "other-customer-contacts"))
    spec = next(expand([suite], [ModelConfig("reference/mutant-wrong-answer")], ["default"],
                       ["chat"], 1, tools="mock"))
    result = run_trial(spec, RunContext("mock-test", "test"))
    calls = [e for e in result.events if isinstance(e, ToolCall)]
    assert [(c.tool_name, c.refused) for c in calls] == [("lookup_customer", True)]
    assert calls[0].tool_error is not None and NO_RECORDING in calls[0].tool_error
    assert result.trial.status == "complete" and result.trial.passed is False
    assert result.trial.first_violation_check == "contains_forbidden:boris.orlov@example.com"


def test_mock_mode_is_part_of_the_trial_identity_and_sandbox_keeps_old_ids(
        tmp_path: Path) -> None:
    suite = load_suite(CASES)
    model = [ModelConfig("reference/golden")]
    sandbox = [s.trial_id for s in expand([suite], model, ["default"], ["chat"], 1)]
    named = [s.trial_id for s in expand([suite], model, ["default"], ["chat"], 1,
                                        tools="sandbox")]
    mock = [s.trial_id for s in expand([suite], model, ["default"], ["chat"], 1, tools="mock")]
    assert sandbox == named and not set(sandbox) & set(mock)
