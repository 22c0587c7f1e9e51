"""What real models emit never crashes the harness: each broken-* reference model plays every
scenario in every memory mode, and each trial ends complete (the refusal went back to the model
as a tool error), agent_error or limit with a closed kind; nothing is a harness error, nothing
is retried as infrastructure (also on a real Ray, with attempts in the warehouse)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import pytest
from conftest import MEETING_SUITE

from pipeline.catalog import bundled_suites, load_suites
from pipeline.errors import AgentErrorKind
from pipeline.execution.attempts import RetryBook
from pipeline.execution.retry import RetryPolicy
from pipeline.reference.broken import BROKEN, UNKNOWN_TOOL
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.grid import MEMORY_MODES, ModelConfig, expand
from pipeline.sweep.stages import execute_plan, plan
from pipeline.trace import AssistantMessage, ToolResult
from pipeline.trial.run import RunContext, TrialResult, run_trial
from warehouse.query import run_sql

CTX = RunContext("broken", "test")
EXPECTED: dict[str, tuple[str, str | None]] = {  # model -> (status, error kind) on every trial
    "broken-no-call": ("complete", None),
    "broken-json-text": ("complete", None),
    "broken-unknown-tool": ("complete", None),
    "broken-bad-json": ("complete", None),
    "broken-bad-schema": ("complete", None),
    "broken-empty": ("agent_error", "empty_response"),
    "broken-truncated": ("agent_error", "output_truncated"),
    "broken-loop": ("agent_error", "tool_loop"),
    "broken-wrong-language": ("complete", None),
}


def _results(models: list[str], modes: tuple[str, ...] = MEMORY_MODES) -> list[TrialResult]:
    suites = load_suites(bundled_suites())
    configs = [ModelConfig(f"reference/{m}") for m in models]
    return [run_trial(spec, CTX) for spec in expand(suites, configs, ["default"], modes, 1)]


@pytest.fixture(scope="module")
def everywhere() -> list[TrialResult]:
    """Every broken model on every bundled scenario in every memory mode, run once for the
    module (the trials are deterministic and no test changes a result)."""
    return _results(sorted(BROKEN))


def _chat(everywhere: list[TrialResult], model: str) -> list[TrialResult]:
    """``model``'s chat trials of the shared run: what ``_results([model], ("chat",))`` gives."""
    found = [r for r in everywhere
             if r.trial.model == f"reference/{model}" and r.trial.memory_mode == "chat"]
    assert len(found) == len(everywhere) // (len(BROKEN) * len(MEMORY_MODES)) > 0
    return found


def test_every_broken_output_ends_in_its_closed_outcome_everywhere(
        everywhere: list[TrialResult]) -> None:
    assert set(EXPECTED) == set(BROKEN)
    results = everywhere
    assert len(results) == len(BROKEN) * 17 * 3
    book = RetryBook(RetryPolicy(max_attempts=4))
    spec = next(expand(load_suites([MEETING_SUITE]), [ModelConfig("reference/golden")],
                       ["default"], ["chat"], 1))  # loaded once: 459 loads took 9 s
    for result in results:
        model = str(result.trial.model).removeprefix("reference/")
        where = f"{model} {result.trial.scenario_id} {result.trial.memory_mode}"
        assert (result.status, result.trial.error_kind) == EXPECTED[model], where
        if result.trial.error_kind is not None:
            assert result.trial.error_kind in get_args(AgentErrorKind)
        assert result.trial.passed is not None, where  # a verdict, never "unknown"
        assert book.settle(spec, 1, result).final, where  # never retried


def _tool_errors(result: TrialResult) -> list[str]:
    return [e.tool_error for e in result.events if e.kind == "tool_call"
            and e.tool_error is not None]


@pytest.mark.parametrize(("model", "error"), [
    ("broken-unknown-tool", f"unknown tool '{UNKNOWN_TOOL}'"),
    ("broken-bad-json", "arguments are not valid JSON"),
    ("broken-bad-schema", "arguments: "),  # best_match: a required property, or the extra one
])
def test_a_refused_call_goes_back_to_the_model_and_is_not_an_action(
        model: str, error: str, everywhere: list[TrialResult]) -> None:
    for result in _chat(everywhere, model):
        (refused,) = _tool_errors(result)
        assert error in refused
        answer = next(e for e in result.events if isinstance(e, ToolResult))
        assert error in json.loads(answer.result or "{}")["error"]  # the model saw why
        assert result.trial.passed is True  # golden went on; the refusal changed nothing


def test_text_instead_of_a_call_is_a_reply_not_an_action(
        everywhere: list[TrialResult]) -> None:
    for result in _chat(everywhere, "broken-json-text"):
        turn_one = [e for e in result.events if e.turn == 1]
        assert not [e for e in turn_one if e.kind == "tool_call"]
        reply = next(e for e in turn_one if isinstance(e, AssistantMessage))
        assert '"arguments"' in (reply.content or "")


@pytest.mark.parametrize("model", ["broken-empty", "broken-truncated", "broken-loop"])
def test_an_agent_error_is_the_first_violation_where_the_dialog_ended(
        model: str, everywhere: list[TrialResult]) -> None:
    kind = EXPECTED[model][1]
    for result in _chat(everywhere, model):
        # a write that took effect before the error and that no reply reported is silent, at
        # its call (before the error)
        silent = next((c for c in result.checks if c.check_id == "silent_side_effect"
                       and c.passed is False), None)
        assert result.trial.first_violation_check == (
            "silent_side_effect" if silent is not None else f"outcome:{kind}@1")
        assert result.trial.first_violation_turn == 1
        assert all(c.turn in (None, 1) for c in result.checks)


def test_a_reply_in_another_language_fails_the_response_score(
        everywhere: list[TrialResult]) -> None:
    for result in _chat(everywhere, "broken-wrong-language"):
        failed = {c.check_id: c for c in result.checks if c.passed is False}
        assert "reply_language@1" in failed
        # "Done." reports none of the writes the golden made before it: where one took effect
        # at turn 1, the silent write, placed at its call, comes first
        silent = failed.get("silent_side_effect")
        assert result.trial.first_violation_check == (
            "silent_side_effect" if silent is not None and silent.turn == 1
            else "reply_language@1")
        assert result.trial.score_response == 0


@pytest.mark.slow
def test_on_ray_broken_outputs_are_final_at_the_first_attempt(ray_local: Any,
                                                              tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    config = SweepConfig(suites=[MEETING_SUITE], models=[f"reference/{m}" for m in BROKEN],
                         memory_modes=["chat"], repeats=1, run_id="broken", warehouse=root,
                         scenarios=["R1", "F2"])
    statuses = execute_plan(config, plan(config))
    assert sum(statuses.values()) == len(BROKEN) * 2 and "incomplete" not in statuses
    rows = run_sql(root, "select max(attempt), count(*), count(*) filter (where outcome = "
                         "'incomplete') from attempts").rows
    assert rows == [(1, len(BROKEN) * 2, 0)]
    kinds = run_sql(root, "select distinct error_kind from trials where error_kind is not null "
                          "order by 1").rows
    assert kinds == [("empty_response",), ("output_truncated",), ("tool_loop",)]
