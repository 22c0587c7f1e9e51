"""A dialog with an external agent: the user's turns (fixed or simulated) played to it one by
one, its model and tool calls recorded through the trial's doors.

The trace is the built-in agent's: a user message per turn, an assistant message per model call,
a tool call and result per tool call. The reply the user sees is the agent's answer; when it is
not the last text its model wrote in that turn, it is recorded as one more assistant message
(no usage: no model call made it). Whatever failure the doors kept that is not the agent's
(the provider, the gateway) ends the trial as such, even if the agent went on.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from pipeline.environment.sandbox import Sandbox
from pipeline.errors import AgentError
from pipeline.models.client import ModelClient
from pipeline.models.providers import resolve_route
from pipeline.trace import AssistantMessage, Trace, UserMessage
from pipeline.trial.agent import UserTurn, refused
from pipeline.trial.external import refs
from pipeline.trial.external.door import Door
from pipeline.trial.external.gateway import gateway
from pipeline.trial.external.mcp_tools import mcp_tools
from pipeline.trial.external.players import HttpPlayer, Player, PythonPlayer
from pipeline.trial.external.session import AgentSession
from pipeline.trial.spec import AGENT_TURN_TIMEOUT_S, TrialSpec
from pipeline.user.simulator import UserSimulator
from pipeline.util.redact import redact, redact_optional


def play(spec: TrialSpec, model: ModelClient, sandbox: Sandbox, step_limit: int, trace: Trace,
         turns: Sequence[UserTurn], simulator: UserSimulator | None) -> None:
    """Play the dialog; raises AgentError, InfraError or ConfigError like the built-in agent."""
    route = spec.model.route or resolve_route(spec.model.name)
    door = Door(model, spec.model.name, sandbox, trace, step_limit, route.agent_adaptation)
    with _opened(door), _player(spec, door) as player:
        if simulator is not None:
            _simulated(door, player, simulator)
        else:
            _scripted(door, player, turns)


@contextmanager
def _opened(door: Door) -> Iterator[None]:
    doors = gateway()
    doors.open(door)
    try:
        yield
    finally:
        doors.close(door)


@contextmanager
def _player(spec: TrialSpec, door: Door) -> Iterator[Player]:
    timeout = spec.agent_turn_timeout_s or AGENT_TURN_TIMEOUT_S
    session = session_for(spec, door)
    player: Player
    try:
        if spec.agent.kind == "http":
            player = HttpPlayer(spec.agent.name, session, timeout, door.model_seconds)
        else:
            player = PythonPlayer(refs.load(spec.agent), session, timeout, door.model_seconds)
    except AgentError:
        _raise_kept(door)
        raise
    try:
        yield player
    finally:
        door.close()
        player.close()


def session_for(spec: TrialSpec, door: Door) -> AgentSession:
    doors = gateway()
    url = doors.trial_url(door)
    domain = door.sandbox.domain

    def mcp_url() -> str | None:
        mcp = mcp_tools(doors.door)
        return f"{mcp.url}/t/{door.token}/mcp" if mcp is not None else None

    return AgentSession(
        trial_id=spec.trial_id, model=door.alias, model_name=spec.model.name,
        model_base_url=f"{url}/v1", api_key=door.key, system_prompt=spec.prompt.text,
        tools=domain.openai_tools(), tools_url=f"{url}/tools", call_tool=door.call_tool,
        max_steps=door.step_limit,
        mcp=mcp_url)


def _scripted(door: Door, player: Player, turns: Sequence[UserTurn]) -> None:
    for turn, user in enumerate(turns, start=1):
        if user.if_refused is not None and not refused(door.trace, turn - 1, user.if_refused):
            return
        _turn(door, player, turn, UserMessage(turn=turn, content=redact(user.text)), user.text)


def _simulated(door: Door, player: Player, simulator: UserSimulator) -> None:
    said: list[str] = []
    replies: list[str] = []
    for turn in range(1, simulator.max_turns + 1):
        utterance = simulator.speak(turn, replies, said)
        reply = utterance.reply
        door.trace.user_usage.add(reply.input_tokens, reply.output_tokens, reply.cost_usd,
                                  reply.model_version, reply.system_fingerprint)
        event = UserMessage(
            turn=turn, content=redact_optional(reply.content), simulated=True,
            input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
            cached_input_tokens=reply.cached_input_tokens, latency_ms=reply.latency_ms,
            finish_reason=reply.finish_reason)
        if utterance.stop:
            with door.lock:
                door.trace.add(event)
            return
        replies.append(_turn(door, player, turn, event, utterance.text))
        said.append(utterance.text)
    raise AgentError("turn_limit", f"the simulated user still spoke after "
                                   f"{simulator.max_turns} turns", simulator.max_turns)


def _turn(door: Door, player: Player, turn: int, event: UserMessage, text: str) -> str:
    """One user turn: the agent's reply, recorded as the turn's final reply."""
    door.begin_turn(turn)
    with door.lock:
        door.trace.add(event)
        door.trace.turns_played = turn
    try:
        reply = player.respond(text, turn)
    except Exception:
        _raise_kept(door)
        raise
    _raise_kept(door)
    if (door.reply_recorded(turn) or "").strip() != reply.strip():
        with door.lock:
            door.trace.add(AssistantMessage(turn=turn, step=door.steps, content=redact(reply)))
    return reply


def _raise_kept(door: Door) -> None:
    """The failure the doors kept, if any: it says what really ended the turn."""
    if door.failure is not None:
        raise door.failure
