"""Model calls through LiteLLM: imported lazily, options per call, errors classified.

Retry, rate limiting and recording are written around this, not inside provider adapters.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, Protocol

from pipeline.errors import AgentError, ConfigError, InfraError, InfraErrorKind
from pipeline.models.config import ModelConfig
from pipeline.models.direct import DirectRoute, direct_route, usable
from pipeline.models.litellm_overhead import pricing_options, quiet_call, quiet_service_timing
from pipeline.models.providers import ModelProvider, install_providers, provider_for, resolve_route
from pipeline.models.routes import CALL_TAG_KEY, ModelRoute
from pipeline.models.token_estimate import estimate_tokens, reported_tokens
from pipeline.runtime.as_coroutine import off_loop
from pipeline.util.redact import redact


@dataclass(frozen=True)
class ToolCallRequest:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ModelReply:
    content: str | None
    tool_calls: tuple[ToolCallRequest, ...]
    finish_reason: str | None
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    model_version: str | None
    latency_ms: float
    cached_input_tokens: int | None = None
    """Prompt tokens served from the provider's prompt cache, when it reports them."""
    system_fingerprint: str | None = None
    """The provider's report of its backend configuration (for local models: runtime,
    template, tool-call adapter)."""

    def assistant_message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message


CallPurpose = Literal["planner", "summary", "state", "user", "judge"]
"""What a model call is for: the agent's planner or memory, a user simulator (``user``), or an
LLM judge (``judge``: pipeline.judge, never part of a trial)."""
# CALL_TAG_KEY (pipeline.models.routes): the call tag (purpose, turn) goes in LiteLLM ``metadata``
# and,
# when the call has an ``extra_body``, in the request body. Real providers ignore it.


class ModelClient(Protocol):
    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 purpose: CallPurpose = "planner", turn: int = 0,
                 response_schema: dict[str, Any] | None = None) -> ModelReply:
        """One model call. ``response_schema``: the reply must be JSON valid against it; the
        endpoint is asked to enforce it when it can (``response_format``), else it is only
        stated in the messages by the caller."""


_litellm: Any = None
_litellm_lock = threading.Lock()


def litellm_module() -> Any:
    """Import LiteLLM once per process (the first call that needs it: a run of in-process
    models never does), with the offline cost map, and set up every registered provider
    (``pipeline.models.providers``)."""
    global _litellm
    if _litellm is not None:
        return _litellm
    with _litellm_lock:  # trial threads of a worker race for the first import
        if _litellm is not None:
            return _litellm
        import os

        os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        import litellm

        from pipeline.models import http_pools

        litellm.suppress_debug_info = True  # no "Give Feedback" banner on every exception
        install_providers(litellm)
        http_pools.install(litellm)
        quiet_service_timing(litellm)
        _litellm = litellm
    return _litellm


@dataclass(frozen=True)
class CallOptions:
    """A client's options for every call, merged once (``LiteLLMClient.options``): the call
    tag, tools and LiteLLM's own options are added per call."""

    route: ModelRoute
    provider: ModelProvider
    options: dict[str, Any]
    """Generation params, the route's options and ``call_params``, without ``metadata`` and
    ``extra_body``."""
    metadata: dict[str, Any]
    extra_body: dict[str, Any] | None
    timeout_s: float | None
    """The call's total time limit as configured (the options' ``timeout``, else the
    route's), None for ``DEFAULT_CALL_TIMEOUT_S``."""

    @classmethod
    def of(cls, model: ModelConfig, call_params: Mapping[str, Any]) -> CallOptions:
        route = model.route or resolve_route(model.name)
        provider = provider_for(model.name)
        options = provider.client_options({**model.generation_params(), **model.secret_params(),
                                           **route.call_params, **call_params})
        metadata = options.pop("metadata", None) or {}
        extra_body = options.pop("extra_body") if "extra_body" in options else None
        timeout_s = options.get("timeout") or route.timeout_s
        return cls(route, provider, options, metadata, extra_body, timeout_s)

    def for_call(self, tag: dict[str, Any], tools: list[dict[str, Any]] | None
                 ) -> dict[str, Any]:
        """One call's options: fresh dicts where the call tag goes, so calls share nothing a
        callee could change."""
        kwargs = {**self.options, "metadata": {**self.metadata, CALL_TAG_KEY: tag}}
        if self.extra_body is not None:
            kwargs["extra_body"] = {**self.extra_body, CALL_TAG_KEY: tag}
        if tools:
            kwargs["tools"] = tools
        return kwargs


@dataclass
class LiteLLMClient:
    """Every call of one trial, planner and memory alike, with the model's generation params
    (temperature, params, seed), its route's options and ``call_params``."""

    model: ModelConfig
    call_params: dict[str, Any] = field(default_factory=dict)
    """Per-call options (api_base, timeout, a provider's per-trial options...): read once, at
    the first call (``options``)."""
    direct: bool = True
    """Call through LiteLLM's provider translation without ``litellm.completion`` where
    ``pipeline.models.direct`` covers the route (False: always ``litellm.completion``)."""
    _options: CallOptions | None = field(default=None, init=False, repr=False, compare=False)
    _timeout: Any = field(default=None, init=False, repr=False, compare=False)
    _direct: DirectRoute | None = field(default=None, init=False, repr=False, compare=False)
    _direct_known: bool = field(default=False, init=False, repr=False, compare=False)

    @property
    def route(self) -> ModelRoute:
        return self.model.route or resolve_route(self.model.name)

    @property
    def options(self) -> CallOptions:
        """The options of every call, merged at the first call (a client serves one trial)."""
        if self._options is None:
            self._options = CallOptions.of(self.model, self.call_params)
        return self._options

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 purpose: CallPurpose = "planner", turn: int = 0,
                 response_schema: dict[str, Any] | None = None) -> ModelReply:
        prepared = self.options
        route, provider = prepared.route, prepared.provider
        kwargs = prepared.for_call({"purpose": purpose, "turn": turn}, tools)
        if provider.answers_in_process:
            return _answer_in_process(provider, route, messages, kwargs, self.model.name)
        litellm = litellm_module()
        if self._timeout is None:
            self._timeout = call_timeout(prepared.timeout_s or DEFAULT_CALL_TIMEOUT_S)
        kwargs["timeout"] = self._timeout
        direct = self._direct_route(litellm)
        if direct is None:
            kwargs.update(pricing_options(litellm, route.litellm_model, kwargs))
        if response_schema is not None and enforces_schema(litellm, route):
            kwargs["response_format"] = {"type": "json_schema", "json_schema": {
                "name": purpose, "schema": portable_schema(response_schema)}}
        estimate = _estimate(messages, tools, kwargs)
        # The executor's limits (no-op when none is set).
        with _guarded(self.model.name, estimate) as report:
            refuse_if_forbidden(litellm, route.litellm_model, kwargs)
            started = time.perf_counter()
            try:
                if direct is not None:
                    response = direct.complete(messages, kwargs)
                else:  # LiteLLM's own handler may not send through our HTTP client: in a
                    # trial coroutine its wait goes to a thread, never onto the loop
                    response = off_loop(partial(_completion, litellm, route.litellm_model,
                                                messages, kwargs))
            except Exception as exc:  # classified below; anything unknown re-raises
                raise classify(litellm, exc, provider) from exc
            latency_ms = (time.perf_counter() - started) * 1000
        reply = parse_response(response, latency_ms)
        if report is not None:
            report(reported_tokens(reply.input_tokens, reply.output_tokens))
        return reply


    def _direct_route(self, litellm: Any) -> DirectRoute | None:
        """The direct way for this client's calls (resolved at the first call), None when
        they go through ``litellm.completion``; checked again at each call for a LiteLLM
        callback or setting configured since."""
        if not self.direct:
            return None
        if not self._direct_known:
            prepared = self.options
            self._direct = direct_route(litellm, prepared.route.litellm_model,
                                        prepared.options, prepared.metadata)
            self._direct_known = True
        return self._direct if self._direct is not None and usable(litellm) else None


def _completion(litellm: Any, model: str, messages: list[dict[str, Any]],
                kwargs: dict[str, Any]) -> Any:
    with quiet_call(litellm, kwargs):
        return litellm.completion(model=model, messages=messages, num_retries=0, **kwargs)


def _estimate(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
              options: dict[str, Any]) -> Callable[[], int]:
    """The call's token estimate, computed only if a ``tpm`` limit asks for it."""
    return lambda: estimate_tokens(messages, tools, options)


def _answer_in_process(provider: ModelProvider, route: ModelRoute,
                       messages: list[dict[str, Any]], options: dict[str, Any],
                       model: str) -> ModelReply:
    """A call a provider answers in this process (the reference models): the same options,
    limits, injected faults and error reading as a LiteLLM call, without LiteLLM's import,
    request building and cost lookup around a scripted answer. Nothing leaves the process, so
    the request switch has nothing to refuse."""
    with _guarded(model, _estimate(messages, None, options)):
        started = time.perf_counter()
        try:
            choice = provider.answer(route, messages, options)
        except Exception as exc:  # the provider's own reading first, as for LiteLLM's errors
            own = provider.classify(exc, error_message(exc))
            if own is None:
                raise
            raise own from exc
        latency_ms = (time.perf_counter() - started) * 1000
    return reply_of_choice(choice, latency_ms)


def reply_of_choice(choice: Mapping[str, Any], latency_ms: float) -> ModelReply:
    """A chat completion's first choice in OpenAI's shape (``finish_reason``, ``message``), as
    an in-process provider gives it: no usage, no cost, no reported version."""
    message = choice.get("message") or {}
    calls = tuple(
        ToolCallRequest(
            id=str(c.get("id")),
            name=str((c.get("function") or {}).get("name")),
            arguments=_arguments_text((c.get("function") or {}).get("arguments")),
        )
        for c in (message.get("tool_calls") or [])
    )
    return ModelReply(content=message.get("content"), tool_calls=calls,
                      finish_reason=choice.get("finish_reason"), input_tokens=None,
                      output_tokens=None, cost_usd=None, model_version=None,
                      latency_ms=latency_ms)


def _arguments_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


ALLOW_MODEL_REQUESTS = "AGENTSWEEP_ALLOW_MODEL_REQUESTS"
"""Set to ``0`` (the tests do, like pydantic-ai's ``models.ALLOW_MODEL_REQUESTS = False``),
it refuses every model call that would leave the machine; unset, calls are allowed."""


def refuse_if_forbidden(litellm: Any, model: str, kwargs: dict[str, Any]) -> None:
    """ConfigError, before anything is sent, for a call to a real provider while
    ``AGENTSWEEP_ALLOW_MODEL_REQUESTS=0``. Allowed still: a provider served in this process (a
    LiteLLM custom provider: the reference models) and any ``api_base`` on loopback (the local
    models, the reference server)."""
    import ipaddress
    import os
    from urllib.parse import urlsplit

    if os.environ.get(ALLOW_MODEL_REQUESTS, "1").strip().lower() not in ("0", "false", "no"):
        return
    provider = model.split("/", 1)[0]
    if any(item.get("provider") == provider for item in litellm.custom_provider_map):
        return
    base = kwargs.get("api_base") or kwargs.get("base_url")
    host = urlsplit(str(base)).hostname if base else None
    try:
        loopback = host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        raise ConfigError(f"{model}: real model requests are forbidden here "
                          f"({ALLOW_MODEL_REQUESTS}=0, the tests' default; pytest --live or "
                          f"{ALLOW_MODEL_REQUESTS}=1 allows them); nothing was sent to "
                          f"{host or 'the provider'}")


DEFAULT_CALL_TIMEOUT_S = 120.0
"""A model call's total time limit unless the model's settings or its route say otherwise
(LiteLLM's own default is 6,000 s: a provider that never answers would hang the sweep)."""
CONNECT_TIMEOUT_S = 10.0


def call_timeout(total_s: float) -> Any:
    """The total and connect limits of one call, as the HTTP client takes them."""
    import httpx  # LiteLLM's own dependency

    return httpx.Timeout(total_s, connect=min(CONNECT_TIMEOUT_S, total_s))


def portable_schema(schema: Any) -> Any:
    """The schema with ``\\d`` in its patterns spelled ``[0-9]``: the same language (JSON
    Schema patterns are ECMA-262, where ``\\d`` is ``[0-9]``), but grammar-constrained servers
    (llama.cpp) do not support the escape and would drop the whole pattern."""
    if isinstance(schema, dict):
        return {key: _digits_spelled_out(value) if key == "pattern" and isinstance(value, str)
                else portable_schema(value) for key, value in schema.items()}
    if isinstance(schema, list):
        return [portable_schema(item) for item in schema]
    return schema


def _digits_spelled_out(pattern: str) -> str:
    out, in_class, index = [], False, 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            pair = pattern[index:index + 2]
            out.append(("0-9" if in_class else "[0-9]") if pair == "\\d" else pair)
            index += 2
            continue
        if char == "[" and not in_class:
            in_class = True
        elif char == "]" and in_class:
            in_class = False
        out.append(char)
        index += 1
    return "".join(out)


def enforces_schema(litellm: Any, route: ModelRoute) -> bool:
    """Whether to send ``response_format`` with a JSON Schema on this route."""
    if route.structured_output is not None:
        return route.structured_output
    try:
        return bool(litellm.supports_response_schema(model=route.litellm_model))
    except Exception:  # LiteLLM's table does not know the model: do not ask for it
        return False


_MISSING_KEY = re.compile(r"Missing credentials|api_key client option must be set|"
                          r"Invalid API Key|Incorrect API key", re.IGNORECASE)
"""How a provider says that the key is missing or wrong, whatever the status it sends."""

UsageReport = Callable[[int | None], None]
"""Told the tokens a finished call used as the provider counted them (None: not reported)."""
ModelCallGuard = Callable[[str, Callable[[], int]], AbstractContextManager[UsageReport | None]]
"""Given a model name and the call's token estimate (computed on demand), a context held
around one model call: it may wait (a concurrency or rate limit, a paused group), raise
InfraError (an injected fault) and sees the classified error of the call; it may give a
``UsageReport`` for the call's reported tokens."""

_call_guard: ContextVar[ModelCallGuard | None] = ContextVar("model_call_guard", default=None)


@contextmanager
def model_call_guard(guard: ModelCallGuard | None) -> Iterator[None]:
    """Route every model call made in this context (thread) through ``guard``."""
    token = _call_guard.set(guard)
    try:
        yield
    finally:
        _call_guard.reset(token)


def _guarded(model: str, estimate: Callable[[], int]
             ) -> AbstractContextManager[UsageReport | None]:
    guard = _call_guard.get()
    return nullcontext(None) if guard is None else guard(model, estimate)


def classify(litellm: Any, exc: Exception, provider: ModelProvider | None = None) -> Exception:
    """Map a LiteLLM exception to InfraError (or to the agent's ``context_limit``: its dialog
    outgrew the model's context, or ConfigError); ``provider`` (the call's) reads its own errors
    first. Other exceptions are returned unchanged."""
    message = error_message(exc)
    if isinstance(exc, litellm.ContextWindowExceededError):
        return AgentError("context_limit", message)
    own = provider.classify(exc, message) if provider is not None else None
    if own is not None:
        return own
    refused = (litellm.AuthenticationError, litellm.PermissionDeniedError,
               litellm.NotFoundError, litellm.BadRequestError, litellm.UnsupportedParamsError)
    if isinstance(exc, refused) or _MISSING_KEY.search(str(exc)):
        return ConfigError(message)
    table: list[tuple[InfraErrorKind, Any]] = [
        ("rate_limit", litellm.RateLimitError),
        ("timeout", litellm.Timeout),
        ("connection", litellm.APIConnectionError),
        ("overloaded", litellm.ServiceUnavailableError),
        ("server_error", litellm.InternalServerError),
    ]
    if _connection_failed(exc):
        return InfraError("connection", message)
    if _status(exc) == OVERLOADED_STATUS:  # LiteLLM reports it as an InternalServerError
        return InfraError("overloaded", message, _retry_after(exc))
    for kind, cls in table:
        if isinstance(exc, cls):
            return InfraError(kind, message, _retry_after(exc))
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status >= 500:
        return InfraError("server_error", message)
    return exc


OVERLOADED_STATUS = 529
"""Anthropic's "overloaded" status (``overloaded_error``)."""


def _status(exc: BaseException) -> int | None:
    """The status the provider sent: LiteLLM keeps it as ``provider_status_code`` where its
    own ``status_code`` differs (Anthropic's 529 becomes an InternalServerError, 500)."""
    status = getattr(exc, "provider_status_code", None) or getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _connection_failed(exc: BaseException) -> bool:
    """A refused or dropped connection. LiteLLM reports these as InternalServerError (500)
    from its OpenAI-compatible and Anthropic paths; the cause chain still holds openai's
    APIConnectionError or httpx's network error."""
    import httpx  # LiteLLM's own dependencies, already imported by it
    import openai

    seen: BaseException | None = exc
    for _ in range(16):  # a cause chain may loop
        if seen is None:
            break
        if isinstance(seen, openai.APIConnectionError):
            return not isinstance(seen, openai.APITimeoutError)
        if isinstance(seen, httpx.NetworkError | httpx.RemoteProtocolError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def error_message(exc: BaseException) -> str:
    """A failed call's exception as it is recorded: type and first line, secrets redacted."""
    return redact(f"{type(exc).__name__}: {first_line(str(exc))}")[:1000]


def first_line(text: str) -> str:
    """LiteLLM appends tracebacks and bug-report links to messages; keep the message."""
    return text.strip().split("\n", 1)[0]


def _retry_after(exc: Exception) -> float | None:
    """The ``Retry-After`` the provider sent, in seconds: on the exception's response, or
    where LiteLLM keeps the headers when its exception has no response (Anthropic, Gemini)."""
    value = None
    for headers in (getattr(getattr(exc, "response", None), "headers", None),
                    getattr(exc, "litellm_response_headers", None)):
        if value is None and headers is not None:
            value = headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def parse_response(response: Any, latency_ms: float) -> ModelReply:
    choice = response.choices[0]
    message = choice.message
    calls = tuple(
        ToolCallRequest(
            id=str(c.id),
            name=str(c.function.name),
            arguments=c.function.arguments if isinstance(c.function.arguments, str)
            else json.dumps(c.function.arguments),
        )
        for c in (message.tool_calls or [])
    )
    usage = getattr(response, "usage", None)
    return ModelReply(
        content=message.content,
        tool_calls=calls,
        finish_reason=choice.finish_reason,
        input_tokens=_int_or_none(getattr(usage, "prompt_tokens", None)),
        output_tokens=_int_or_none(getattr(usage, "completion_tokens", None)),
        cost_usd=_reported_cost(usage),
        model_version=getattr(response, "model", None) or None,
        latency_ms=latency_ms,
        system_fingerprint=getattr(response, "system_fingerprint", None) or None,
        cached_input_tokens=_int_or_none(getattr(getattr(usage, "prompt_tokens_details", None),
                                                 "cached_tokens", None)),
    )


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _reported_cost(usage: Any) -> float | None:
    """Cost only when the provider itself reported it (never LiteLLM's price-table estimate)."""
    cost = getattr(usage, "cost", None)
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
