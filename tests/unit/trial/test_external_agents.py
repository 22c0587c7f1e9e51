"""External agents (docs/agents.md): a Python object or an HTTP service plays the dialog, its
model calls through the trial's gateway, its tools through the trial's sandbox."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pytest
from conftest import MEETING_SUITE, REPO

from pipeline.catalog import Suite, load_domain, load_suite
from pipeline.errors import InfraError
from pipeline.models.client import CallPurpose, ModelClient, ModelReply
from pipeline.sweep.grid import AgentRef, ModelConfig, TrialSpec, expand
from pipeline.trial.external.refs import AgentRefError, resolve
from pipeline.trial.run import RunContext, TrialResult, model_client_for, run_trial

HELPERS = REPO / "tests" / "helpers" / "agents.py"
PLAIN = REPO / "examples" / "agents" / "plain_openai.py"
CTX = RunContext("external", "test")


def _agent(name: str) -> AgentRef:
    return resolve(f"{HELPERS}:{name}")


def _specs(agent: AgentRef, model: str = "reference/golden", suite: Suite | None = None,
           scenarios: Sequence[str] = ()) -> list[TrialSpec]:
    modes = ["chat"]
    specs = expand([suite or load_suite(MEETING_SUITE)], [ModelConfig(model)], ["default"],
                   modes, 1, agents=[agent])
    return [s for s in specs if not scenarios or s.scenario.id in scenarios]


def _events(result: TrialResult) -> list[tuple[Any, ...]]:
    """What the trace says happened, without timings and ids."""
    return [(e.kind, e.turn, e.step, getattr(e, "tool_name", None),
             getattr(e, "arguments", None), getattr(e, "content", None),
             getattr(e, "result", None)) for e in result.events]


def _verdicts(results: Sequence[TrialResult]) -> list[tuple[Any, ...]]:
    return [(r.trial.scenario_id, r.status, r.trial.passed, r.trial.error_kind,
             r.trial.first_violation_check, r.trial.model_calls, r.trial.tool_calls)
            for r in results]


@pytest.mark.parametrize("model", ["reference/golden", "reference/mutant-ignores-switch"])
def test_an_agent_written_against_the_docs_gets_the_builtin_agents_verdicts_and_trace(
        model: str) -> None:
    builtin = [run_trial(s, CTX) for s in _specs(AgentRef(), model, scenarios=("R1", "F1"))]
    external = [run_trial(s, CTX) for s in _specs(resolve(f"{PLAIN}:make"), model,
                                                  scenarios=("R1", "F1"))]
    assert _verdicts(external) == _verdicts(builtin)
    assert [_events(r) for r in external] == [_events(r) for r in builtin]
    passed = {r.trial.scenario_id: r.trial.passed for r in external}
    assert passed == ({"R1": True, "F1": True} if model == "reference/golden"
                      else {"R1": True, "F1": False})
    row = external[0].trial
    assert (row.agent, row.memory_mode, row.agent_version) == (f"{PLAIN}:make", "own", "1.0")
    assert row.agent_sha256 is not None and len(row.agent_sha256) == 64
    assert builtin[0].trial.agent == "builtin" and builtin[0].trial.agent_sha256 is None


@pytest.mark.parametrize("name", ["streaming", "asynchronous"])
def test_streaming_and_async_agents_play_the_same_dialog(name: str) -> None:
    (builtin,) = [run_trial(s, CTX) for s in _specs(AgentRef(), scenarios=("R1",))]
    (result,) = [run_trial(s, CTX) for s in _specs(_agent(name), scenarios=("R1",))]
    assert _verdicts([result]) == _verdicts([builtin])
    assert _events(result) == _events(builtin)


@dataclass
class Counted:
    """The trial's own client, reporting usage (the reference models report none)."""

    inner: ModelClient
    fail_at_call: int | None = None
    calls: int = 0

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 purpose: CallPurpose = "planner", turn: int = 0,
                 response_schema: dict[str, Any] | None = None) -> ModelReply:
        self.calls += 1
        if self.calls == self.fail_at_call:
            raise InfraError("server_error", "the provider answered 503")
        reply = self.inner.complete(messages, tools, purpose, turn, response_schema)
        return replace(reply, input_tokens=10 * len(messages), output_tokens=3 + turn,
                       cost_usd=0.001, model_version="ref-2026")


def test_usage_is_recorded_as_for_the_builtin_agent_on_the_same_model() -> None:
    rows = []
    for agent in (AgentRef(), resolve(f"{PLAIN}:make")):
        (spec,) = _specs(agent, scenarios=("V3",))
        rows.append(run_trial(spec, CTX, client=Counted(model_client_for(spec))))
    usage = [(r.trial.model_calls, r.trial.input_tokens, r.trial.output_tokens,
              r.trial.cost_usd, r.trial.model_version) for r in rows]
    assert usage[0] == usage[1] and usage[0][1] is not None and usage[0][0] == 7
    tokens = [[(e.input_tokens, e.output_tokens) for e in r.events
               if e.kind == "assistant_message"] for r in rows]
    assert tokens[0] == tokens[1]


@pytest.mark.parametrize("name", ["plain", "swallowing"])
def test_a_provider_failure_behind_the_gateway_is_infrastructure_even_if_the_agent_goes_on(
        name: str) -> None:
    (spec,) = _specs(_agent(name), scenarios=("V3",))
    result = run_trial(spec, CTX, client=Counted(model_client_for(spec), fail_at_call=2))
    assert (result.status, result.trial.error_kind) == ("incomplete", "server_error")
    assert result.trial.passed is None


@pytest.mark.parametrize(("name", "status", "kind"), [
    ("raising", "agent_error", "agent_exception"),
    ("not_text", "agent_error", "agent_reply"),
    ("no_respond", "agent_error", "agent_reply"),
])
def test_the_agents_own_failures_count_against_it(name: str, status: str, kind: str) -> None:
    (spec,) = _specs(_agent(name), scenarios=("R1",))
    result = run_trial(spec, CTX)
    assert (result.status, result.trial.error_kind) == (status, kind)
    if name == "raising":
        assert "the agent's own bug" in (result.trial.error_message or "")


def test_an_agent_that_never_answers_is_an_agent_timeout_and_frees_the_trial() -> None:
    (spec,) = _specs(_agent("sleeping"), scenarios=("R1",))
    result = run_trial(replace(spec, agent_turn_timeout_s=0.3), CTX)
    assert (result.status, result.trial.error_kind) == ("agent_error", "agent_timeout")
    assert "0.3 s" in (result.trial.error_message or "")


@dataclass
class Slow:
    """The trial's own client, each call taking ``delay_s`` (a busy provider, a queue)."""

    inner: ModelClient
    delay_s: float

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 purpose: CallPurpose = "planner", turn: int = 0,
                 response_schema: dict[str, Any] | None = None) -> ModelReply:
        time.sleep(self.delay_s)
        return self.inner.complete(messages, tools, purpose, turn, response_schema)


@pytest.mark.slow  # its model calls wait 0.75 s in all
@pytest.mark.parametrize("door", ["python", "http"])
def test_a_slow_model_behind_the_gateway_never_times_the_agent_out(
        served: Any, door: str) -> None:
    """The turn's limit is the agent's own time: 0.2 s, with model calls of 0.25 s each."""
    service, chosen = served
    chosen["name"] = "plain"
    agent = _agent("plain") if door == "python" else resolve(service.url)
    (spec,) = _specs(agent, scenarios=("R2",))
    result = run_trial(replace(spec, agent_turn_timeout_s=0.2), CTX,
                       client=Slow(model_client_for(spec), 0.25))
    assert (result.status, result.trial.passed) == ("complete", True), result.trial.error_message
    assert result.trial.model_calls == 3 and result.trial.latency_ms > 3 * 250


def test_the_step_limit_holds_for_an_external_agent() -> None:
    (spec,) = _specs(_agent("plain"), scenarios=("R1",))
    result = run_trial(replace(spec, step_limit=1), CTX)
    # R1's first turn needs a search then a reply: two model calls, one too many
    assert (result.status, result.trial.error_kind) == ("limit", "step_limit")


@pytest.mark.parametrize(("name", "message"), [
    ("nowhere.py:make", "no such file"),
    (f"{HELPERS}:missing", "has no callable 'missing'"),
    (f"{HELPERS}", "name it path/to/file.py:attribute"),
    ("no_such_package.module:make", "cannot be imported"),
])
def test_an_agent_that_cannot_be_found_is_named_before_anything_runs(name: str,
                                                                     message: str) -> None:
    with pytest.raises(AgentRefError, match=message):
        resolve(name)


# --- the gateway's own door ----------------------------------------------------------------

def test_the_gateway_serves_one_trial_behind_its_key_and_records_tool_route_calls() -> None:
    from helpers.agents import SEEN, status

    agent = resolve("helpers.agents:probe")  # a module:attribute agent
    assert agent.code_sha256 is not None
    (spec,) = _specs(agent, scenarios=("R1",))
    result = run_trial(spec, CTX)
    seen = SEEN
    session = seen["session"]
    assert seen["models"]["data"][0]["id"] == session.model
    assert seen["no_key"] == 401
    assert [t["function"]["name"] for t in seen["tools"]["tools"]] == [
        t["function"]["name"] for t in session.tools]
    assert seen["tool_call"]["error"] is None and seen["tool_call"]["result"]["rooms"]
    assert "unknown tool" in seen["unknown_tool"]["error"]
    calls = [e for e in result.events if e.kind == "tool_call"]
    assert [(c.tool_name, c.turn, c.tool_error) for c in calls][:2] == [
        ("search_rooms", 1, None), ("launch_rockets", 1, "unknown tool 'launch_rockets'")]
    assert session.model_name == "reference/golden" and session.system_prompt == spec.prompt.text
    assert status(session.model_base_url + "/models", session.api_key) == 404  # trial over


# --- an HTTP agent ----------------------------------------------------------------------------

@pytest.fixture
def served() -> Iterator[Any]:
    """examples/agents/http_service.py serving the plain test agent, on loopback."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "http_service_example", REPO / "examples" / "agents" / "http_service.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from helpers.agents import plain, raising

    factories = {"plain": plain, "raising": raising}
    chosen = {"name": "plain"}
    service = module.AgentService(lambda session: factories[chosen["name"]](session))
    thread = threading.Thread(target=service.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield service, chosen
    service.shutdown()
    service.server_close()


@pytest.mark.parametrize("name", ["plain", "raising"])
def test_an_http_agent_plays_the_dialog_and_its_5xx_is_its_own_failure(
        served: Any, name: str) -> None:
    service, chosen = served
    chosen["name"] = name
    agent = resolve(service.url)
    assert (agent.kind, agent.version) == ("http", "1.0")
    (builtin,) = [run_trial(s, CTX) for s in _specs(AgentRef(), scenarios=("V3",))]
    (result,) = [run_trial(s, CTX) for s in _specs(agent, scenarios=("V3",))]
    if name == "plain":
        assert _verdicts([result]) == _verdicts([builtin])
        assert _events(result) == _events(builtin)
        assert not service.agents  # the session was ended
    else:
        assert (result.status, result.trial.error_kind) == ("agent_error", "agent_exception")
        assert "500" in (result.trial.error_message or "")


def test_an_http_agent_that_is_not_there_is_refused_before_anything_runs() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(AgentRefError, match="GET /info failed"):
        resolve(f"http://127.0.0.1:{port}")


BUNDLED_SUITES = sorted((REPO / "catalogs").glob("*/suites/*.jsonl"))


@pytest.mark.slow
@pytest.mark.parametrize("door", ["python", "http"])
def test_the_builtin_agent_wrapped_as_python_and_http_agents_gets_its_verdicts_everywhere(
        served: Any, door: str) -> None:
    """Every bundled suite, trial by trial: the built-in agent (chat memory, golden model) and
    the same loop as a Python agent, or the same again behind the HTTP protocol."""
    from helpers.wrapped_builtin import make

    service, _ = served
    service.factory = make
    agent = (resolve(f"{REPO / 'tests' / 'helpers' / 'wrapped_builtin.py'}:make")
             if door == "python" else resolve(service.url))
    compared = 0
    for path in BUNDLED_SUITES:
        suite = load_suite(path)
        builtin = [run_trial(s, CTX) for s in _specs(AgentRef(), suite=suite)]
        external = [run_trial(s, CTX) for s in _specs(agent, suite=suite)]
        assert _verdicts(external) == _verdicts(builtin), (path.name, agent.name)
        assert [[(c.check_id, c.passed) for c in r.checks] for r in external] == [
            [(c.check_id, c.passed) for c in r.checks] for r in builtin], path.name
        compared += len(external)
    assert compared == sum(len(load_suite(p).scenarios) for p in BUNDLED_SUITES) > 150


def test_the_trials_tools_are_an_mcp_server_behind_the_trials_key() -> None:
    from helpers.agents import SEEN

    (spec,) = _specs(resolve("helpers.agents:mcp_agent"), scenarios=("R1",))
    result = run_trial(spec, CTX)
    assert result.status == "complete", result.trial.error_message
    assert SEEN["mcp_tools"] == [t["function"]["name"]
                                 for t in load_domain(spec.scenario.domain).openai_tools()]
    is_error, text = SEEN["mcp_result"]
    assert not is_error and json.loads(text)["rooms"]
    assert SEEN["mcp_bad_key"] == 401
    calls = [(e.kind, e.tool_name, e.turn) for e in result.events
             if e.kind in ("tool_call", "tool_result")]
    assert calls[:2] == [("tool_call", "search_rooms", 1), ("tool_result", "search_rooms", 1)]


@dataclass
class EmptyAfterTools:
    """A model that answers a tool result with nothing, once (as the bundled local model does):
    golden otherwise."""

    inner: ModelClient
    seen: list[list[dict[str, Any]]]
    emptied: int = 0

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 purpose: CallPurpose = "planner", turn: int = 0,
                 response_schema: dict[str, Any] | None = None) -> ModelReply:
        self.seen.append(messages)
        reply = self.inner.complete(messages, tools, purpose, turn, response_schema)
        if messages[-1]["role"] == "tool" and not reply.tool_calls and not self.emptied:
            self.emptied += 1
            return replace(reply, content="")
        return reply


def test_the_local_models_adaptation_applies_behind_the_gateway_as_for_the_builtin() -> None:
    """The route's system note reaches the model, and an empty reply to a tool result is asked
    once more (a nudge event) instead of ending the external agent's dialog."""
    local = ModelConfig("local/default").resolved()
    adaptation = local.route.agent_adaptation if local.route else None
    assert adaptation is not None and adaptation.nudge and adaptation.system_note
    (spec,) = _specs(_agent("plain"), scenarios=("R2",))
    golden = model_client_for(spec)
    routed = spec.model.model_copy()
    routed._route = local.route  # the golden model, served as the local model's route is
    spec = replace(spec, model=routed)
    seen: list[list[dict[str, Any]]] = []
    result = run_trial(spec, CTX, client=EmptyAfterTools(golden, seen))
    assert (result.status, result.trial.passed) == ("complete", True), result.trial.error_message
    nudges = [e for e in result.events if e.kind == "nudge"]
    assert [n.content for n in nudges] == [adaptation.nudge]
    assert all(adaptation.system_note in m[0]["content"] for m in seen)
    (nudged,) = [m for m in seen if m[-1] == {"role": "system", "content": adaptation.nudge}]
    assert nudged[-2]["role"] == "tool"  # the empty reply was not put back in between
