"""LiteLLM's tool-schema sanitising on the direct path, done once per distinct tool list.

LiteLLM's OpenAI chat config rewrites the tools of every request (``transform_request`` calls
its ``_sanitized_tools_update_for_openai``: regex patterns Python cannot compile are dropped,
and for api.openai.com top-level combinators are flattened). That is a walk of every schema of
every tool on every call, though a trial sends the same tools at each call and a sweep's trials
of one domain send the same list. ``sanitising_once`` gives the direct path
(``pipeline.models.direct``) a copy of a provider config whose sanitising step remembers what
it gave for a tool list, keyed by the list's exact content (its pickle: values, types, order)
and the provider and ``api_base`` the step reads. A tool the step leaves as it is comes back as
the caller's own object, as LiteLLM's step returns it; a rewritten one comes back as a fresh
deep copy of the rewrite, so no call can change what another is sent. Anything else (no list
of tools, a list that cannot be pickled, an answer of another shape) goes to LiteLLM's step
each time.
"""

from __future__ import annotations

import copy
import pickle
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

SANITISING_STEP = "_sanitized_tools_update_for_openai"
"""The config method that sanitises a request's tools (LiteLLM's OpenAI chat config)."""
MAX_REMEMBERED = 256
"""Distinct (config class, tool list) answers kept per process; past it they are forgotten."""

SanitisingStep = Callable[[Mapping[str, Any], Mapping[str, Any]], Mapping[str, Any]]


@dataclass(frozen=True)
class _Answer:
    """What the step gave for one tool list."""

    update: Mapping[str, Any] | None
    """The step's answer when it had no ``tools`` to give (returned as it is)."""
    rewritten: tuple[Any, ...] = ()
    """Per tool, None when the step kept the caller's object, else its rewrite."""

    def for_call(self, tools: Sequence[Any]) -> Mapping[str, Any]:
        if self.update is not None:
            return self.update
        return MappingProxyType({"tools": [
            tool if new is None else copy.deepcopy(new)
            for tool, new in zip(tools, self.rewritten, strict=True)]})


_answers: dict[tuple[type, bytes], _Answer] = {}
_answers_lock = threading.Lock()


def sanitising_once(config: Any) -> Any:
    """A copy of ``config`` whose sanitising step remembers its answers (``config`` itself
    when it has no such step: a provider other than OpenAI's wire)."""
    if not callable(getattr(config, SANITISING_STEP, None)):
        return config
    remembering = copy.copy(config)
    step: SanitisingStep = getattr(remembering, SANITISING_STEP)
    setattr(remembering, SANITISING_STEP, _Remembering(type(config), step))
    return remembering


class _Remembering:
    """A config's sanitising step with its answers remembered per tool list."""

    def __init__(self, owner: type, step: SanitisingStep) -> None:
        self._owner = owner
        self._step = step

    def __call__(self, optional_params: Mapping[str, Any],
                 litellm_params: Mapping[str, Any]) -> Mapping[str, Any]:
        tools = optional_params.get("tools")
        if not isinstance(tools, list) or (key := _key(tools, litellm_params)) is None:
            return self._step(optional_params, litellm_params)
        answer = _answers.get((self._owner, key))
        if answer is None:
            update = self._step(optional_params, litellm_params)
            answer = _answer(tools, update)
            if answer is None:
                return update
            _remember((self._owner, key), answer)
        return answer.for_call(tools)


def _key(tools: list[Any], litellm_params: Mapping[str, Any]) -> bytes | None:
    """The exact content the step reads, as bytes; None when it cannot be pickled."""
    try:
        return pickle.dumps((tools, litellm_params.get("custom_llm_provider"),
                             litellm_params.get("api_base")), protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return None


def _answer(tools: list[Any], update: Mapping[str, Any]) -> _Answer | None:
    """The step's answer in a form to give again, None for one of another shape."""
    if "tools" not in update:
        return _Answer(update) if not update else None
    given = update["tools"]
    if len(update) != 1 or not isinstance(given, list) or len(given) != len(tools):
        return None
    return _Answer(None, tuple(None if new is old else copy.deepcopy(new)
                               for new, old in zip(given, tools, strict=True)))


def _remember(key: tuple[type, bytes], answer: _Answer) -> None:
    with _answers_lock:
        if len(_answers) >= MAX_REMEMBERED:
            _answers.clear()
        _answers[key] = answer


def forget() -> None:
    """Drop every remembered answer (tests)."""
    with _answers_lock:
        _answers.clear()
