"""The offline reference model: a LiteLLM custom provider that replays golden actions.

``reference/golden`` is a control agent, not a model: it answers each model call with the next
golden action of the scenario (a tool call or the turn's final reply), returning real
``tool_calls`` through LiteLLM exactly as a provider would. The scenario's script reaches it per
call in ``metadata`` (see ``reference_call_params``); it finds its place in the script from the
conversation itself: the number of user messages is the turn, the number of assistant messages
since the last user message is the step. It reports no token usage and no model version, so
those columns stay null. Nothing here runs at import time: the provider is registered by
``register_reference_provider``, which ``pipeline.llm`` calls once per process.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from pipeline.catalog import CallAction, Scenario

REFERENCE_PROVIDER = "reference"
SCRIPT_KEY = "agentsweep_reference_script"

Script = list[list[dict[str, Any]]]
"""Per turn, the actions in order: {"call": {"name", "arguments"}} or {"reply": text}."""

Variant = Callable[[Script], Script]
REFERENCE_VARIANTS: dict[str, Variant] = {"golden": lambda script: script}


REFERENCE_ERROR_MARK = "agentsweep-reference-script:"


class ReferenceScriptError(ValueError):
    """The reference model was called without a script, or past its end (a harness error)."""

    def __init__(self, message: str) -> None:
        super().__init__(f"{REFERENCE_ERROR_MARK} {message}")


def golden_script(scenario: Scenario) -> Script:
    script: Script = []
    for turn in scenario.turns:
        actions: list[dict[str, Any]] = []
        for action in turn.golden:
            if isinstance(action, CallAction):
                actions.append({"call": {"name": action.call.name,
                                         "arguments": dict(action.call.arguments)}})
            else:
                actions.append({"reply": action.reply})
        script.append(actions)
    return script


def reference_call_params(model_name: str, scenario: Scenario) -> dict[str, Any]:
    """Per-call LiteLLM options that hand the scenario's script to a reference model."""
    variant = model_name.split("/", 1)[1]
    if variant not in REFERENCE_VARIANTS:
        known = ", ".join(f"{REFERENCE_PROVIDER}/{v}" for v in sorted(REFERENCE_VARIANTS))
        raise ValueError(f"unknown reference model {model_name!r}; known: {known}")
    return {"metadata": {SCRIPT_KEY: golden_script(scenario)}}


def position(messages: Sequence[dict[str, Any]]) -> tuple[int, int]:
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


def next_action(script: Script, messages: Sequence[dict[str, Any]]) -> dict[str, Any]:
    turn, step = position(messages)
    if not 1 <= turn <= len(script) or step >= len(script[turn - 1]):
        raise ReferenceScriptError(f"script has no action for turn {turn}, step {step}")
    return script[turn - 1][step]


def response_message(action: dict[str, Any], turn: int, step: int) -> dict[str, Any]:
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
    class ReferenceLLM(litellm.CustomLLM):  # type: ignore[misc, name-defined]
        def completion(self, model: str, messages: list[dict[str, Any]], *args: Any,
                       **kwargs: Any) -> Any:
            metadata = (kwargs.get("litellm_params") or {}).get("metadata") or {}
            script = metadata.get(SCRIPT_KEY)
            if script is None:
                raise ReferenceScriptError(f"{REFERENCE_PROVIDER}/{model}: no script passed")
            variant = REFERENCE_VARIANTS[model]
            turn, step = position(messages)
            action = next_action(variant(script), messages)
            choice = {"index": 0, **response_message(action, turn, step)}
            return litellm.ModelResponse(choices=[choice])

        async def acompletion(self, model: str, messages: list[dict[str, Any]], *args: Any,
                              **kwargs: Any) -> Any:
            return self.completion(model, messages, *args, **kwargs)

    return ReferenceLLM()
