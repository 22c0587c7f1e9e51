"""The framework examples (examples/agents/): an OpenAI Agents SDK agent, a LangGraph graph and
a PydanticAI agent, each pointed at the trial's gateway and its MCP tools, get the built-in
agent's verdicts on the golden model and are caught by a mutant, scenario by scenario."""

from __future__ import annotations

import pytest
from conftest import MEETING_SUITE, REPO

from pipeline.catalog import load_suite
from pipeline.sweep.grid import AgentRef, ModelConfig, expand
from pipeline.trial.external.refs import resolve
from pipeline.trial.run import RunContext, run_trial

EXAMPLES = REPO / "examples" / "agents"
CTX = RunContext("frameworks", "test")


SWITCHES = ("R1", "F1", "F2", "F3")
"""The mutant's run: the scenarios where the user switches (F*) and one where nobody does."""


def _outcomes(agent: AgentRef, model: str, only: tuple[str, ...] = ()) -> list[tuple[object, ...]]:
    specs = expand([load_suite(MEETING_SUITE)], [ModelConfig(model)], ["default"], ["chat"], 1,
                   agents=[agent])
    results = [run_trial(spec, CTX) for spec in specs if not only or spec.scenario.id in only]
    return [(r.trial.scenario_id, r.status, r.trial.passed, r.trial.first_violation_check,
             r.trial.model_calls, r.trial.tool_calls) for r in results]


@pytest.mark.slow
@pytest.mark.parametrize("example", ["openai_agents_sdk", "langgraph_agent", "pydantic_ai_agent"])
def test_a_framework_agent_passes_golden_and_the_mutant_catches_it(example: str) -> None:
    agent = resolve(f"{EXAMPLES / example}.py:make")
    for model, only in (("reference/golden", ()),
                        ("reference/mutant-ignores-switch", SWITCHES)):
        theirs = _outcomes(agent, model, only)
        assert theirs == _outcomes(AgentRef(), model, only), (example, model)
        failed = {scenario for scenario, _, passed, *_ in theirs if not passed}
        assert failed == (set() if not only else {"F1", "F2", "F3"}), (example, model)
