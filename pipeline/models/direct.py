"""Model calls through LiteLLM's provider translation, without ``litellm.completion`` around it.

``litellm.completion`` resolves the provider, maps the params, builds logging objects, prices
the response and looks up the model's info on every call. A trial's calls share all of that
but the messages, the tools and the call tag. A ``DirectRoute`` resolves it once per client:
the provider's chat config (LiteLLM's own translation: ``transform_request``,
``transform_response``, its error class), the URL, the headers and the mapped params. Each
call then runs the steps of the LiteLLM handler that ``litellm.completion`` would reach, in its
order, over the per-thread connection pool of ``pipeline.models.http_pools``, with a logging
object that records nothing: ``BaseLLMHTTPHandler.completion`` for the OpenAI wire (validate
the environment, transform the request, merge ``extra_body``, sign, POST, transform the
response), ``AnthropicChatCompletion.completion`` for Anthropic's (its beta-header filtering
included). The provider config's tool-schema sanitising is remembered per tool list
(``pipeline.models.tool_schemas``): a trial's calls send the same tools.

Errors are raised as LiteLLM raises them: an HTTP status or a network error becomes the
provider's error as that handler builds it, then LiteLLM's exception type
(``litellm.exception_type``, as ``litellm.completion`` does), so ``client.classify`` reads
them unchanged. ``direct_route`` returns None for whatever it does not cover (a configured
LiteLLM callback or global, an option it does not read, a stream, no key or no ``api_base``,
a provider other than ``DIRECT_PROVIDERS``); such calls go through ``litellm.completion``.
"""

from __future__ import annotations

import copy
import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.models.litellm_overhead import NOMINAL_PRICE, logging_configured
from pipeline.models.tool_schemas import sanitising_once

DIRECT_PROVIDERS = frozenset({"openai", "anthropic"})
"""LiteLLM providers whose chat calls may go the direct way."""

ROUTE_OPTIONS = frozenset({"api_key", "api_base", "timeout", "extra_headers", *NOMINAL_PRICE})
"""Call options the direct path reads itself, besides the provider's generation params (the
nominal price only feeds LiteLLM's own cost estimate, which the direct path never makes)."""

KEPT_FOR_LITELLM = frozenset({"stream", "stream_options", "max_retries"})
"""Params a provider supports that change how LiteLLM's own path sends the call (a stream, the
SDK's retries): calls with one of them go through ``litellm.completion``."""

PER_CALL_PARAMS = ("tools", "response_format")
"""Params that change from call to call: mapped by the provider config at each call."""

LITELLM_GLOBALS = ("api_key", "api_base", "headers", "enable_preview_features")
"""LiteLLM module settings that change what a call sends: any of them set, calls keep
LiteLLM's own path."""


class _NoLogging:
    """What a provider config is handed as its logging object: it records nothing."""

    def __init__(self, optional_params: dict[str, Any], litellm_params: dict[str, Any]) -> None:
        self.optional_params = optional_params
        self.litellm_params = litellm_params
        self.model_call_details: dict[str, Any] = {}

    def pre_call(self, *args: Any, **kwargs: Any) -> None:
        return None

    def post_call(self, *args: Any, **kwargs: Any) -> None:
        return None


@dataclass(frozen=True)
class DirectRoute:
    """One client's calls, resolved once: the provider's config and everything per call but
    the messages, tools, ``response_format`` and ``extra_body``."""

    litellm: Any
    config: Any
    """LiteLLM's chat config of the provider (a ``BaseConfig``)."""
    provider: str
    model: str
    """The model as the provider names it (without LiteLLM's prefix)."""
    api_key: str | None
    api_base: str | None
    url: str
    headers: Mapping[str, str]
    params: Mapping[str, Any]
    """The generation params, mapped to the provider's names."""
    litellm_params: Mapping[str, Any]

    def complete(self, messages: list[dict[str, Any]], kwargs: Mapping[str, Any]) -> Any:
        """One call: LiteLLM's ``ModelResponse``, or LiteLLM's exception for a failed call."""
        litellm = self.litellm
        try:
            return self._complete(messages, kwargs)
        except Exception as exc:  # mapped as litellm.completion maps it, then raised
            try:
                mapped = litellm.exception_type(model=self.model, original_exception=exc,
                                                custom_llm_provider=self.provider)
            except Exception as raised:  # exception_type raises its mapping
                mapped = raised
            raise mapped from exc

    def _complete(self, messages: list[dict[str, Any]], kwargs: Mapping[str, Any]) -> Any:
        from litellm.litellm_core_utils.prompt_templates.common_utils import (
            get_completion_messages,
        )
        from litellm.utils import validate_and_fix_openai_messages, validate_and_fix_openai_tools

        fixed = get_completion_messages(
            messages=validate_and_fix_openai_messages(messages=messages),
            ensure_alternating_roles=False, user_continue_message=None,
            assistant_continue_message=None)
        optional = self._optional_params(kwargs, validate_and_fix_openai_tools(
            tools=kwargs.get("tools")))
        litellm_params = dict(self.litellm_params)
        if self.provider == "anthropic":
            return self._anthropic(fixed, optional, litellm_params, kwargs["timeout"])
        return self._base_handler(fixed, optional, litellm_params, kwargs["timeout"])

    def _base_handler(self, messages: list[Any], optional: dict[str, Any],
                      litellm_params: dict[str, Any], timeout: Any) -> Any:
        """The steps of LiteLLM's ``BaseLLMHTTPHandler.completion`` (its OpenAI path too)."""
        json_mode = optional.pop("json_mode", False)
        extra_body = optional.pop("extra_body", None)
        headers = self.config.validate_environment(
            api_key=self.api_key, headers=dict(self.headers), model=self.model,
            messages=messages, optional_params=optional, api_base=self.api_base,
            litellm_params=litellm_params)
        data = self.config.transform_request(model=self.model, messages=messages,
                                             optional_params=optional,
                                             litellm_params=litellm_params, headers=headers)
        if extra_body is not None:
            data = {**data, **self.config.transform_extra_body(
                extra_body=extra_body, request=data, model=self.model,
                litellm_params=litellm_params)}
        headers, signed = self.config.sign_request(
            headers=headers, optional_params=optional, request_data=data, api_base=self.url,
            api_key=self.api_key, stream=False, fake_stream=False, model=self.model)
        response = _post(self.config, self.url, headers,
                         signed if signed is not None else json.dumps(data), timeout)
        return self._response(response, data, messages, optional, litellm_params, json_mode)

    def _anthropic(self, messages: list[Any], optional: dict[str, Any],
                   litellm_params: dict[str, Any], timeout: Any) -> Any:
        """The steps of LiteLLM's ``AnthropicChatCompletion.completion`` (its own handler)."""
        from litellm.anthropic_beta_gated_fields import strip_beta_gated_request_body
        from litellm.anthropic_beta_headers_manager import update_request_with_filtered_beta

        optional, messages = copy.deepcopy(optional), copy.deepcopy(messages)
        optional.pop("stream", None)
        json_mode = optional.pop("json_mode", False)
        vertex = {"is_vertex_request": optional.pop("is_vertex_request", False)}
        optional.pop("vertex_count_tokens_location", None)
        headers = self.config.validate_environment(
            api_key=self.api_key, headers=dict(self.headers), model=self.model,
            messages=messages, optional_params={**optional, **vertex},
            litellm_params=litellm_params, api_base=self.url)
        request = self.config.transform_request(
            model=self.model, messages=messages, optional_params={**optional, **vertex},
            litellm_params=litellm_params, headers=headers)
        headers, request = update_request_with_filtered_beta(
            headers=headers, request_data=request, provider=self.provider, api_base=self.url)
        data = dict(strip_beta_gated_request_body(
            request, headers, drop_params=litellm_params.get("drop_params"), model=self.model,
            provider=self.provider))
        response = _post_anthropic(self.config, self.url, headers, json.dumps(data), timeout)
        return self._response(response, data, messages, optional, litellm_params, json_mode)

    def _response(self, response: Any, data: Mapping[str, Any], messages: list[Any],
                  optional: dict[str, Any], litellm_params: dict[str, Any],
                  json_mode: Any) -> Any:
        return self.config.transform_response(
            model=self.model, raw_response=response, model_response=self.litellm.ModelResponse(),
            logging_obj=_NoLogging(optional, litellm_params), api_key=self.api_key,
            request_data=data, messages=messages, optional_params=optional,
            litellm_params=litellm_params, encoding=None, json_mode=json_mode)

    def _optional_params(self, kwargs: Mapping[str, Any], tools: list[dict[str, Any]] | None
                         ) -> dict[str, Any]:
        """This call's params: the route's, this call's tools and response format mapped by
        the provider's config, and its ``extra_body``."""
        optional = dict(self.params)
        per_call = {name: kwargs[name] for name in PER_CALL_PARAMS if kwargs.get(name)}
        if tools:
            per_call["tools"] = tools
        if per_call:
            optional = self.config.map_openai_params(
                non_default_params=per_call, optional_params=optional, model=self.model,
                drop_params=bool(self.litellm.drop_params))
        if kwargs.get("extra_body"):  # placed and filtered as LiteLLM's get_optional_params does
            from litellm.utils import add_provider_specific_params_to_optional_params

            optional = add_provider_specific_params_to_optional_params(
                optional_params=optional, passed_params={"extra_body": kwargs["extra_body"]},
                custom_llm_provider=self.provider, openai_params=[])
        return optional


_handlers: tuple[Any, Any] | None = None
_handlers_lock = threading.Lock()


def _http() -> tuple[Any, Any]:
    """LiteLLM's HTTP handler over our per-thread pool, and its base LLM handler (for its error
    reading); one of each per process."""
    global _handlers
    if _handlers is not None:
        return _handlers
    with _handlers_lock:
        if _handlers is None:
            from litellm.llms.custom_httpx.http_handler import HTTPHandler
            from litellm.llms.custom_httpx.llm_http_handler import BaseLLMHTTPHandler

            from pipeline.models.http_pools import pooled_client

            _handlers = (HTTPHandler(client=pooled_client()), BaseLLMHTTPHandler())
    return _handlers


def _post(config: Any, url: str, headers: Mapping[str, Any], body: str | bytes,
          timeout: Any) -> Any:
    """POST as LiteLLM's handler does: a status >= 400 or a network error raised as the
    provider's error class (a timeout as ``litellm.Timeout``), with the error body as the
    OpenAI SDK reads it (``sdk_error_body``)."""
    http, base = _http()
    try:
        return http.post(url=url, headers=dict(headers), data=body, timeout=timeout)
    except Exception as exc:  # read as LiteLLM's BaseLLMHTTPHandler reads it
        try:
            base._handle_error(e=exc, provider_config=config)
        except Exception as error:  # _handle_error raises the provider's error
            if getattr(error, "body", None) is None:
                error.body = sdk_error_body(getattr(exc, "response", None))  # type: ignore[attr-defined]
            raise error from exc
        raise


def _post_anthropic(config: Any, url: str, headers: Mapping[str, Any], body: str,
                    timeout: Any) -> Any:
    """POST as LiteLLM's Anthropic handler does: any failure raised as ``AnthropicError`` with
    the status, text and headers it carries (a timeout: ``litellm.Timeout``'s 408)."""
    from litellm.llms.anthropic.common_utils import AnthropicError

    http, _ = _http()
    try:
        return http.post(url, headers=dict(headers), data=body, timeout=timeout)
    except Exception as exc:  # read as LiteLLM's Anthropic handler reads it
        response = getattr(exc, "response", None)
        headers_of = getattr(exc, "headers", None)
        if headers_of is None and response:
            headers_of = getattr(response, "headers", None)
        text = getattr(exc, "text", str(exc))
        if response and hasattr(response, "text"):
            text = getattr(response, "text", text)
        raise AnthropicError(message=text, status_code=getattr(exc, "status_code", 500),
                             headers=headers_of) from exc


def sdk_error_body(response: Any) -> Any:
    """A failed response's body as the OpenAI SDK keeps it on its error (``error`` of the JSON
    body, else the whole body; None if not JSON): LiteLLM takes the recorded message from it,
    as it does on ``litellm.completion``'s OpenAI path."""
    try:
        data = json.loads(response.text) if response is not None else None
    except ValueError:
        return None
    return data.get("error", data) if isinstance(data, dict) else None


def direct_route(litellm: Any, litellm_model: str, options: Mapping[str, Any],
                 metadata: Mapping[str, Any]) -> DirectRoute | None:
    """The direct way for a client's calls, or None when they must go through
    ``litellm.completion``: a LiteLLM callback or setting is configured, an option is one the
    direct path does not read, or the provider is not one of ``DIRECT_PROVIDERS``."""
    if logging_configured(litellm, {**options, **metadata}) or _globals_set(litellm):
        return None
    model, provider, dynamic_key, api_base = litellm.get_llm_provider(
        model=litellm_model, api_base=options.get("api_base"), api_key=options.get("api_key"))
    api_key = options.get("api_key") or dynamic_key
    if provider not in DIRECT_PROVIDERS or not api_key or not api_base or (
            provider == "anthropic" and os.environ.get("LITELLM_ANTHROPIC_DISABLE_URL_SUFFIX")):
        return None
    config = litellm.ProviderConfigManager.get_provider_chat_config(
        model=model, provider=litellm.LlmProviders(provider))
    if config is None or config.should_fake_stream(model=model, custom_llm_provider=provider,
                                                   stream=False):
        return None
    generation = {k: v for k, v in options.items() if k not in ROUTE_OPTIONS and v is not None}
    supported = set(config.get_supported_openai_params(model)) - set(PER_CALL_PARAMS) - (
        KEPT_FOR_LITELLM)
    if not set(generation) <= supported:
        return None
    return _resolved(litellm, config, provider, model, str(api_key), str(api_base), options,
                     generation)


def _resolved(litellm: Any, config: Any, provider: str, model: str, api_key: str,
              api_base: str, options: Mapping[str, Any],
              generation: dict[str, Any]) -> DirectRoute:
    from litellm.litellm_core_utils.get_litellm_params import get_litellm_params

    litellm_params = get_litellm_params(api_key=api_key, api_base=api_base,
                                        custom_llm_provider=provider)
    params = config.map_openai_params(non_default_params=generation, optional_params={},
                                      model=model, drop_params=bool(litellm.drop_params))
    url = _url(config, provider, model, api_key, api_base, params, litellm_params)
    headers = dict(options.get("extra_headers") or {})
    return DirectRoute(litellm, sanitising_once(config), provider, model, api_key, api_base,
                       url, headers, params, litellm_params)


def _url(config: Any, provider: str, model: str, api_key: str, api_base: str,
         params: Mapping[str, Any], litellm_params: Mapping[str, Any]) -> str:
    """Where the calls go, as LiteLLM's dispatch for the provider says."""
    if provider == "anthropic":  # litellm.main's _complete_anthropic
        from litellm.litellm_core_utils.url_utils import ensure_api_route

        return str(ensure_api_route(api_base, "v1/messages"))
    return str(config.get_complete_url(api_base=api_base, api_key=api_key, model=model,
                                       optional_params=dict(params),
                                       litellm_params=dict(litellm_params), stream=False))


def usable(litellm: Any) -> bool:
    """Whether direct calls are still allowed: no LiteLLM callback or setting configured since
    the route was resolved (read at each call)."""
    return not logging_configured(litellm) and not _globals_set(litellm)


def _globals_set(litellm: Any) -> bool:
    from pipeline.models import http_pools

    return any(getattr(litellm, name, None) for name in LITELLM_GLOBALS) or not (
        http_pools.is_ours(litellm.client_session))
