"""What every wire format of the reference server shares: its errors, its word counts, and the
``Wire`` each format implements.

A wire format translates one generate request into the OpenAI-shaped chat body the reference
models read (``to_chat``), their chat.completion back into its own response (``from_chat``),
and an error into its own error body (``error_body``). Faults are decided once, for every wire
alike (``pipeline.models.faults``); each wire only says how it spells them (``fault``).
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal

from pipeline.models.faults import FaultKind, FaultProfile
from pipeline.reference.reference import SCRIPT_ERROR_TYPE

WireName = Literal["openai", "anthropic", "gemini"]
SERVED_VERSION = "2026-11"
"""Every answer names its model ``<variant>-<SERVED_VERSION>`` (the model version)."""
CONTEXT_WORDS = 8192
"""The context a context-length fault says the model has (in words, our tokens)."""
_SAYS_RATE_LIMIT = re.compile(r"rate[\s_\-]*limit", re.IGNORECASE)
"""LiteLLM turns any error whose text matches this into RateLimitError, whatever the status."""


class RequestError(Exception):
    """A request the server refuses. ``error_type`` is OpenAI's error type (or the reference
    script's, ``SCRIPT_ERROR_TYPE``); each wire spells the error its own way."""

    def __init__(self, status: int, message: str, error_type: str = "invalid_request_error",
                 code: str | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.code = code
        self.headers = dict(headers or {})

    def message(self) -> str:
        """The message as sent: a non-429 (e.g. a 400 naming the ``rate_limit`` field) never
        says "rate limit", so that it stays what its status says."""
        text = str(self)
        return text if self.status == 429 else _SAYS_RATE_LIMIT.sub("429-rate", text)

    def body(self) -> dict[str, Any]:
        """The OpenAI error body (the default wire's)."""
        return {"error": {"message": self.message(), "type": self.error_type, "param": None,
                          "code": self.code}}


def count_words(value: Any) -> int:
    """Whitespace-separated words over every string in a JSON value (our 'tokenizer')."""
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, dict):
        return sum(count_words(v) for v in value.values())
    if isinstance(value, list):
        return sum(count_words(v) for v in value)
    return 0


def cached_words(chat: dict[str, Any]) -> int:
    """Prompt words served from the (pretend) prompt cache: the tools and every message before
    the dialog's last assistant message, which its previous call sent already; 0 on a
    dialog's first call. Deterministic: a pure function of the request."""
    messages = list(chat.get("messages") or [])
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    return count_words([chat.get("tools") or [], messages[:last]]) if last >= 0 else 0


class Wire(ABC):
    """One provider wire format in front of the reference models."""

    name: ClassVar[WireName]
    base_path: ClassVar[str]
    """Appended to ``http://127.0.0.1:PORT`` to make the ``api_base`` LiteLLM is given."""
    overloaded_status: ClassVar[int] = 503

    @abstractmethod
    def model_of(self, path: str) -> str | None:
        """For a POST to ``path``: the model the path names ("" when the body names it), or
        None when ``path`` is not this wire's generate route."""

    @abstractmethod
    def to_chat(self, body: dict[str, Any], path_model: str) -> dict[str, Any]:
        """The request as an OpenAI chat body (model, messages, tools, the script, the call
        tag and the generation options). Raises RequestError."""

    @abstractmethod
    def from_chat(self, completion: dict[str, Any], cached: int) -> dict[str, Any]:
        """The reference model's chat.completion as this wire's response; ``cached``: prompt
        words read from the prompt cache. Raises RequestError for an answer the wire cannot
        carry."""

    @abstractmethod
    def error_body(self, exc: RequestError) -> dict[str, Any]:
        """The error as this wire's JSON body."""

    @abstractmethod
    def context_message(self, prompt_words: int) -> str:
        """How this provider says that a prompt of ``prompt_words`` is over its context."""

    def fault(self, kind: FaultKind, profile: FaultProfile, prompt_words: int
              ) -> RequestError | None:
        """The error that answers an injected fault (None: the fault is not an answer)."""
        if kind == "rate_limit":
            return RequestError(429, "injected rate limit", "rate_limit_error",
                                "rate_limit_exceeded",
                                {"Retry-After": f"{profile.retry_after_s:g}"})
        if kind == "server_error":
            return RequestError(500, "injected server error", "server_error")
        if kind == "overloaded":
            return RequestError(self.overloaded_status, "injected overload: the model is "
                                "overloaded, try again later", "overloaded_error")
        if kind == "context_length":
            words = max(prompt_words, CONTEXT_WORDS + 1)
            return RequestError(400, self.context_message(words), "invalid_request_error",
                                "context_length_exceeded")
        return None


def tool_arguments(arguments: Any) -> dict[str, Any]:
    """A tool call's arguments as the JSON object a structured wire carries. RequestError
    when they are not one (a broken variant's raw text: only OpenAI's wire carries that)."""
    try:
        value = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise RequestError(400, f"tool call arguments {str(arguments)[:80]!r} are not a JSON "
                                "object: this wire format cannot carry them", SCRIPT_ERROR_TYPE)
    return value
