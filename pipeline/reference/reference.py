"""The offline reference models: a LiteLLM custom provider that replays golden actions.

``reference/golden`` is a control agent, not a model: it answers each model call with the next
golden action of the scenario (a tool call or the turn's final reply), returning real
``tool_calls`` through LiteLLM exactly as a provider would. Memory calls (purpose ``summary`` or
``state``, see ``pipeline.models.routes.CALL_TAG_KEY``) get the turn's golden summary or state. The
``reference/mutant-*`` variants apply one deliberate defect each to the golden script
(pipeline.reference.mutants): they exist to prove that the checks catch what they claim to.

The script reaches the model per call in ``metadata`` (in-process) or in the request body (the
HTTP reference server); the model finds its place from the conversation itself: the number of
user messages is the turn, the number of assistant messages since the last user message is the
step. It reports no token usage and no model version, so those columns stay null. Nothing here
runs at import time: ``register_reference_provider`` is called once per process through the
provider registry (``pipeline.reference.provider``, ``pipeline.models.providers``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from difflib import get_close_matches
from typing import Any, Literal

from pipeline.catalog import CallAction, Domain, Scenario, load_domain
from pipeline.models.routes import CALL_TAG_KEY, ModelRoute

REFERENCE_PROVIDER = "reference"
SCRIPT_KEY = "agentsweep_reference_script"
REFERENCE_ERROR_MARK = "agentsweep-reference-script:"
"""Prefix of a ReferenceScriptError's message (for people reading attempts; nothing parses it)."""
SCRIPT_ERROR_TYPE = "agentsweep_reference_script_error"
"""The error ``type`` the reference server answers a broken script with (a 400)."""
ScriptChannel = Literal["metadata", "body"]
"""Where a call carries the script: LiteLLM ``metadata`` (in process) or the request body."""

Script = dict[str, Any]
"""{"turns": [{"actions": [{"call": {...}} | {"reply": str} | {"raw": {...}}], "summary",
"state"}],
"turning_point", "mutation", "fresh_calls", "clarification": [...]} - JSON-able."""

Variant = Callable[[Script], Script]


def _golden(script: Script) -> Script:
    return script


def _variants() -> dict[str, Variant]:
    from pipeline.reference.broken import BROKEN
    from pipeline.reference.condition_agents import VARIANTS
    from pipeline.reference.mutants import MUTANTS

    return {"golden": _golden, **MUTANTS, **BROKEN, **VARIANTS}


class _Registry(Mapping[str, Variant]):
    """Variant name -> script transformation; filled lazily on first use."""

    def __init__(self) -> None:
        self._items: dict[str, Variant] | None = None

    def _all(self) -> dict[str, Variant]:
        if self._items is None:
            self._items = _variants()
        return self._items

    def __getitem__(self, key: str) -> Variant:
        return self._all()[key]

    def __iter__(self) -> Any:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


REFERENCE_VARIANTS: Mapping[str, Variant] = _Registry()


class ReferenceScriptError(ValueError):
    """The reference model was called without a script, or past its end (a harness error)."""

    def __init__(self, message: str) -> None:
        super().__init__(f"{REFERENCE_ERROR_MARK} {message}")


def golden_script(scenario: Scenario, domain: Domain | None = None) -> Script:
    """The scenario's golden actions as a reference script; ``domain``: the scenario's domain
    as the trial loaded it (default: looked up by name), for its reference replies."""
    turns = []
    for turn in scenario.turns:
        actions: list[dict[str, Any]] = []
        for action in turn.golden:
            if isinstance(action, CallAction):
                actions.append({"call": {"name": action.call.name,
                                         "arguments": dict(action.call.arguments)}})
            else:
                actions.append({"reply": action.reply})
        turns.append({"actions": actions, "summary": turn.summary, "state": turn.state,
                      "clarification": turn.clarification})
    condition = scenario.condition
    loaded = domain or load_domain(scenario.domain)
    return {
        "write_tools": sorted(t.name for t in loaded.tools if t.kind == "write"),
        "condition": condition.model_dump(mode="json") if condition is not None else None,
        "turns": turns,
        "turning_point": scenario.turning_point,
        "mutation": scenario.mutation.model_dump(mode="json"),
        "fresh_calls": [f.model_dump(mode="json") for f in scenario.expectations.fresh_calls],
        "replies": loaded.reference_replies.model_dump(exclude_none=True),
        "users": [turn.user for turn in scenario.turns],
    }


HTTP_PROVIDER = "reference-http"
"""``reference-http/<variant>``: the same models behind ``agentsweep reference-server``, reached
through LiteLLM's real OpenAI path (give the server's ``--api-base``)."""
WIRE_OF_PROVIDER = {HTTP_PROVIDER: "openai", "reference-anthropic": "anthropic",
                    "reference-gemini": "gemini"}
"""Each HTTP reference provider and the wire format (LiteLLM prefix) it reaches the server in:
``reference-anthropic/<variant>`` is ``anthropic/<variant>`` against ``agentsweep
reference-server --wire anthropic`` (api_base ``http://127.0.0.1:PORT``),
``reference-gemini/<variant>`` is ``gemini/<variant>`` against ``--wire gemini`` (api_base
``http://127.0.0.1:PORT/v1beta``)."""


def reference_route(model_name: str) -> ModelRoute:
    """The route of ``reference/<variant>`` (in-process) or ``reference-http/<variant>``."""
    from pipeline.reference.judges import JUDGES

    provider, _, variant = model_name.partition("/")
    if provider in WIRE_OF_PROVIDER and variant in JUDGES:
        raise ValueError(f"{model_name}: the scripted judges answer in process only; use "
                         f"{REFERENCE_PROVIDER}/{variant}")
    if variant not in REFERENCE_VARIANTS and variant not in JUDGES:
        raise ValueError(unknown_variant(model_name, sorted([*REFERENCE_VARIANTS, *JUDGES])))
    if provider in WIRE_OF_PROVIDER:
        return ModelRoute(f"{WIRE_OF_PROVIDER[provider]}/{variant}", {"api_key": "no-key"})
    return ModelRoute(model_name, structured_output=False)


def unknown_variant(model_name: str, known: Sequence[str]) -> str:
    """The refusal of a reference model no variant is named: the known names closest to it
    ("did you mean"), else all of them (``reference/`` lists them)."""
    provider, _, variant = model_name.partition("/")
    close = get_close_matches(variant, known, n=3, cutoff=0.6)
    if close:
        names = " or ".join(f"{provider}/{v}" for v in close)
        return (f"unknown reference model {model_name!r}; did you mean {names}? ({len(known)} "
                f"known: --model {provider}/ lists them)")
    listed = ", ".join(f"{REFERENCE_PROVIDER}/{v}" for v in known)
    return (f"unknown reference model {model_name!r}; known: {listed} (also as "
            f"{HTTP_PROVIDER}/<variant> against agentsweep reference-server)")


def reference_call_params(channel: ScriptChannel, scenario: Scenario,
                          domain: Domain | None = None) -> dict[str, Any]:
    """Per-call LiteLLM options that hand the scenario's script to a reference model."""
    script = {SCRIPT_KEY: golden_script(scenario, domain)}
    return {"metadata": script} if channel == "metadata" else {"extra_body": script}


def position(messages: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """(turn, step): user messages so far (1-based turn), assistant messages since the last."""
    turn = 0
    step = 0
    for message in messages:
        role = message.get("role")
        if role == "user":
            turn += 1
            step = 0
        elif role == "assistant":
            step += 1
    return turn, step


def _turn(script: Script, turn: int) -> dict[str, Any]:
    turns = script.get("turns")
    if not isinstance(turns, list) or not 1 <= turn <= len(turns):
        raise ReferenceScriptError(f"script has no turn {turn}")
    entry: dict[str, Any] = turns[turn - 1]
    return entry


def next_action(script: Script, messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    turn, step = position(messages)
    actions = _turn(script, turn)["actions"]
    if step >= len(actions):
        raise ReferenceScriptError(f"script has no action for turn {turn}, step {step}")
    action: dict[str, Any] = actions[step]
    return action


def response_message(action: Mapping[str, Any], turn: int, step: int) -> dict[str, Any]:
    if "raw" in action:  # a message exactly as written (pipeline.reference.broken)
        raw = dict(action["raw"])
        message = {"role": "assistant", "content": raw.get("content")}
        if raw.get("tool_calls"):
            message["tool_calls"] = raw["tool_calls"]
        return {"finish_reason": raw.get("finish_reason", "stop"), "message": message}
    if "call" in action:
        call = action["call"]
        return {
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [{
                    "id": f"call_{turn}_{step}",
                    "type": "function",
                    "function": {"name": call["name"],
                                 "arguments": json.dumps(call["arguments"], ensure_ascii=False)},
                }],
            },
        }
    return {"finish_reason": "stop",
            "message": {"role": "assistant", "content": action["reply"]}}


def answer(variant: str, script: Script, messages: Sequence[Mapping[str, Any]],
           tag: Mapping[str, Any] | None) -> dict[str, Any]:
    """The choice (finish_reason + message) a reference variant gives for one call; a judge
    call (purpose ``judge``) is answered by a scripted judge (``pipeline.reference.judges``), a
    user simulator's call (purpose ``user``) by the reference simulated user."""
    purpose = (tag or {}).get("purpose", "planner")
    if purpose == "judge":
        return _judge(variant, messages)
    if variant not in REFERENCE_VARIANTS:
        raise ReferenceScriptError(f"unknown reference variant {variant!r}")
    played = REFERENCE_VARIANTS[variant](script)
    if purpose == "user":
        return simulated_user(script, messages)
    if purpose in ("summary", "state"):
        turn = int((tag or {}).get("turn") or 0)
        value = _turn(played, turn).get(purpose)
        if value is None:
            raise ReferenceScriptError(f"scenario has no golden {purpose} for turn {turn}")
        content = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return {"finish_reason": "stop", "message": {"role": "assistant", "content": content}}
    turn, step = position(messages)
    return response_message(next_action(played, messages), turn, step)


def simulated_user(script: Script, messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The reference user simulator (any reference variant called with purpose ``user``): says
    the scenario's fixed turns in order, one per call, then the stop signal."""
    from pipeline.user.prompt import STOP

    said = sum(1 for m in messages if m.get("role") == "assistant")
    users = list(script.get("users") or [])
    content = users[said] if said < len(users) else STOP
    return {"finish_reason": "stop", "message": {"role": "assistant", "content": content}}


def _judge(variant: str, messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    from pipeline.reference.judges import JUDGES, evidence_of

    rule = JUDGES.get(variant)
    if rule is None:
        raise ReferenceScriptError(f"{REFERENCE_PROVIDER}/{variant} is not a judge (judges: "
                                   f"{', '.join(sorted(JUDGES))})")
    evidence = evidence_of(messages)
    if evidence is None:
        raise ReferenceScriptError("a judge call without an evidence block")
    return {"finish_reason": "stop", "message": {"role": "assistant", "content": rule(evidence)}}


def scripted_choice(variant: str, metadata: Mapping[str, Any],
                    messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The answer of ``reference/<variant>`` to one call whose options carry ``metadata`` (the
    trial's script and the call tag)."""
    script = metadata.get(SCRIPT_KEY)
    tag = metadata.get(CALL_TAG_KEY)
    if script is None and (tag or {}).get("purpose") != "judge":
        raise ReferenceScriptError(f"{REFERENCE_PROVIDER}/{variant}: no script passed")
    return answer(variant, script or {}, messages, tag)


def register_reference_provider(litellm: Any) -> None:
    """Register the ``reference`` provider with LiteLLM (idempotent)."""
    if any(item.get("provider") == REFERENCE_PROVIDER for item in litellm.custom_provider_map):
        return
    handler = _make_handler(litellm)
    litellm.custom_provider_map = [
        *litellm.custom_provider_map,
        {"provider": REFERENCE_PROVIDER, "custom_handler": handler},
    ]


def _make_handler(litellm: Any) -> Any:
    class ReferenceLLM(litellm.CustomLLM):  # type: ignore[misc]
        def completion(self, model: str, messages: list[dict[str, Any]], *args: Any,
                       **kwargs: Any) -> Any:
            metadata = (kwargs.get("litellm_params") or {}).get("metadata") or {}
            choice = {"index": 0, **scripted_choice(model, metadata, messages)}
            return litellm.ModelResponse(choices=[choice])

        async def acompletion(self, model: str, messages: list[dict[str, Any]], *args: Any,
                              **kwargs: Any) -> Any:
            return self.completion(model, messages, *args, **kwargs)

    return ReferenceLLM()
