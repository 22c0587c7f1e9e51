"""The reference models as providers of the registry (``pipeline.models.providers``), like any
other.

``reference/<variant>`` answers in process, without LiteLLM (``answers_in_process``; the same
answer is registered with LiteLLM as a custom handler for whoever calls ``litellm.completion``
with it); ``reference-http/<variant>`` is the same model behind ``agentsweep reference-server``,
reached through LiteLLM's real OpenAI path: the route that keeps LiteLLM's path tested
(``reference-anthropic/`` and ``reference-gemini/``: through LiteLLM's Anthropic and Gemini
paths, against ``agentsweep reference-server --wire anthropic`` or ``--wire gemini``). All
hand each trial's golden script to the model per call (``trial_params``; over HTTP the script
is registered with the server once per process and each request names it by id:
``pipeline.reference.scripts``) and read a broken
script as our harness's fault (``classify``): the ``ReferenceScriptError`` in the exception's
chain (in process) or the server's error type on a 400 (over HTTP). Only the in-process
provider takes injected faults and needs every scenario's golden memory (``lacking``); the
server has faults of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pipeline.catalog import Domain, Scenario, Suite
from pipeline.errors import InfraError
from pipeline.models.providers import ModelProvider
from pipeline.models.routes import ModelRoute
from pipeline.reference.reference import (
    SCRIPT_ERROR_TYPE,
    ReferenceScriptError,
    ScriptChannel,
    reference_call_params,
    reference_route,
    register_reference_provider,
    scripted_choice,
)
from pipeline.reference.scripts import UNKNOWN_SCRIPT, ScriptRegistrar


class _ReferenceProvider(ModelProvider):
    access = "reference"
    channel: ClassVar[ScriptChannel]

    def route(self, model: str) -> ModelRoute:
        return reference_route(model)

    def trial_params(self, route: ModelRoute, scenario: Scenario,
                     domain: Domain) -> dict[str, Any]:
        return reference_call_params(self.channel, scenario, domain)

    def classify(self, exc: BaseException, message: str) -> Exception | None:
        # A broken reference script is our harness's fault: never the configuration's (a 400),
        # never a connection problem (LiteLLM's wrapper in process), never the agent's.
        return InfraError("harness_error", message) if is_script_error(exc) else None


class InProcessReference(_ReferenceProvider):
    channel = "metadata"
    offline = True
    injects_faults = True
    answers_in_process = True

    def answer(self, route: ModelRoute, messages: list[dict[str, Any]],
               options: dict[str, Any]) -> Mapping[str, Any]:
        variant = route.litellm_model.partition("/")[2]
        return scripted_choice(variant, options.get("metadata") or {}, messages)

    def install(self, litellm: Any) -> None:
        register_reference_provider(litellm)

    def lacking(self, suites: Sequence[Suite], memory_mode: str) -> str | None:
        return lacking_golden_memory(suites, memory_mode)


class HTTPReference(_ReferenceProvider):
    channel = "body"

    def client_options(self, options: dict[str, Any]) -> dict[str, Any]:
        # The script is registered with the server once; each request names it by id.
        return _REGISTRAR.lean(options)

    def classify(self, exc: BaseException, message: str) -> Exception | None:
        if UNKNOWN_SCRIPT in message or UNKNOWN_SCRIPT in str(exc):
            _REGISTRAR.forget()  # the server restarted: the retry registers again
        return super().classify(exc, message)


_REGISTRAR = ScriptRegistrar()


def in_process_provider() -> ModelProvider:
    return InProcessReference()


def http_provider() -> ModelProvider:
    return HTTPReference()


def is_script_error(exc: BaseException) -> bool:
    """A ReferenceScriptError anywhere in the chain, or the reference server's answer to one
    (its error type in the parsed body, or in the text LiteLLM's Anthropic and Gemini paths
    keep of the body)."""
    seen: BaseException | None = exc
    for _ in range(16):  # a cause chain may loop
        if seen is None:
            return False
        body = getattr(seen, "body", None)
        if isinstance(seen, ReferenceScriptError) or SCRIPT_ERROR_TYPE in str(seen) or (
                isinstance(body, dict) and body.get("type") == SCRIPT_ERROR_TYPE):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


GOLDEN_MEMORY_KEY = {"summary": "summary", "structured": "state"}
"""The turn field a reference model plays in each memory mode that has one."""


def lacking_golden_memory(suites: Sequence[Suite], memory_mode: str) -> str | None:
    """Reference models in summary or structured mode play the golden summary or state of
    every turn: the first scenario turn that lacks one (``file:line: field: ...``), else None."""
    key = GOLDEN_MEMORY_KEY.get(memory_mode)
    if key is None:
        return None
    for suite in suites:
        for loaded in suite.scenarios:
            for index, turn in enumerate(loaded.scenario.turns):
                if getattr(turn, key) is None:
                    return (f"{suite.path}:{loaded.line}: turns.{index}.{key}: reference models "
                            f"in {memory_mode} mode need the golden {key} of every turn")
    return None
