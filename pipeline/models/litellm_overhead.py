"""LiteLLM's per-call bookkeeping that nothing reads here, made cheap: its cost estimate and
its success-logging thread.

We record a call's cost only when the provider reports it (``client._reported_cost``), never
LiteLLM's estimate, and we log calls ourselves. LiteLLM's bookkeeping feeds its callbacks, so
it is left alone as soon as a user configures one (``logging_configured``). Without one:

- **Cost**: LiteLLM prices every response in the calling thread (``update_response_metadata``)
  and again in its logging thread. For a model its price table lacks (a local model, the
  reference server) each pricing is a failing table search. ``pricing_options`` gives such a
  model a nominal price per call (LiteLLM's documented per-call custom pricing,
  ``input_cost_per_token`` / ``output_cost_per_token``), looked up once per model: no search.
  The price is 1e-30 USD a token, not zero: a cost of exactly zero sends LiteLLM looking for
  why (its "zero cost" diagnostic: the same failing search). LiteLLM's estimate is never
  recorded; the provider's own report (``usage.cost``) is read from the response, untouched.
- **Logging**: LiteLLM's sync ``completion`` submits its success handler to a thread pool after
  every call (a bounded pool behind a semaphore: a lock convoy under many trial threads) and
  has no public switch for it. ``quiet_call`` runs the call as LiteLLM runs its own nested
  calls (``litellm._internal_context.internal_sub_call``): nothing is submitted. If a LiteLLM
  release drops that context, calls run as before (logged); a test counts the submissions.
- **Timing events**: every provider request is timed for LiteLLM's *service* callbacks (its
  Prometheus, Datadog or OTel service loggers), and a blocking caller in a thread without an
  event loop (every trial thread) gets a new event loop per call to run the hook, which then
  finds no service callback. ``quiet_service_timing`` puts a logger in LiteLLM's place that
  runs the hook only when ``litellm.service_callback`` has an entry, read at each call.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

CALLBACK_SETTINGS = ("callbacks", "success_callback", "failure_callback", "input_callback",
                     "service_callback", "_async_success_callback", "_async_failure_callback",
                     "_async_input_callback")
"""LiteLLM's module-level callback lists; any entry means a user wants its logging."""
CALLBACK_OPTIONS = ("callbacks", "success_callback", "failure_callback")
"""Per-call options that configure callbacks for one call."""

NOMINAL_PRICE = {"input_cost_per_token": 1e-30, "output_cost_per_token": 1e-30}
"""What LiteLLM is told an unpriced model costs, for its own bookkeeping only (see above)."""

_priced: dict[str, bool] = {}
_priced_lock = threading.Lock()


def logging_configured(litellm: Any, options: Mapping[str, Any] | None = None) -> bool:
    """Whether a LiteLLM callback is configured, globally or in this call's ``options``.
    LiteLLM's own internal entries (``"cache"``, which its cache object registers in every
    process that made one, even one nobody passes ``caching=True`` to) are not a user's."""
    if any(_users(getattr(litellm, name, None)) for name in CALLBACK_SETTINGS):
        return True
    return options is not None and any(options.get(name) for name in CALLBACK_OPTIONS)


def _users(callbacks: Any) -> list[Any]:
    if not callbacks:  # the usual case, read at every call: nothing to look up
        return []
    internal = _internal_callback_names()
    return [c for c in callbacks or () if not (isinstance(c, str) and c in internal)]


def _internal_callback_names() -> frozenset[str]:
    try:
        from litellm.constants import INTERNAL_CALLBACK_NAMES
    except ImportError:  # a LiteLLM without the constant: every entry counts as a user's
        return frozenset()
    return frozenset(INTERNAL_CALLBACK_NAMES)


def has_price(litellm: Any, model: str) -> bool:
    """Whether LiteLLM's price table knows ``model`` (a LiteLLM model string); looked up once
    per model and process."""
    known = _priced.get(model)
    if known is not None:
        return known
    try:
        info = litellm.get_model_info(model=model)
        known = info.get("input_cost_per_token") is not None
    except Exception:  # LiteLLM raises for a model its table lacks: no price
        known = False
    with _priced_lock:
        _priced[model] = known
    return known


def pricing_options(litellm: Any, model: str, options: Mapping[str, Any]) -> dict[str, float]:
    """Per-call options that spare LiteLLM's price search: a nominal price for a model its
    table lacks, unless a callback reads LiteLLM's costs or the call prices the model itself."""
    if any(key in options for key in NOMINAL_PRICE) or logging_configured(litellm, options):
        return {}
    return {} if has_price(litellm, model) else dict(NOMINAL_PRICE)


def quiet_call(litellm: Any, options: Mapping[str, Any]) -> AbstractContextManager[object]:
    """Held around one ``litellm.completion``: no success-logging work handed to LiteLLM's
    thread pool, unless a callback is configured."""
    if logging_configured(litellm, options):
        return nullcontext()
    try:
        from litellm._internal_context import internal_sub_call
    except ImportError:  # a LiteLLM without it: its usual logging, nothing else changes
        return nullcontext()
    return internal_sub_call()


def quiet_service_timing(litellm: Any) -> None:
    """LiteLLM's request-timing hook runs only when a service callback is configured (read at
    each call: one configured later is honoured). Its logger is LiteLLM's own, subclassed."""
    from litellm._service_logger import ServiceLogging
    from litellm.litellm_core_utils import logging_utils

    class OnlyWhenConfigured(ServiceLogging):
        def service_success_hook(self, *args: Any, **kwargs: Any) -> None:
            if litellm.service_callback:
                super().service_success_hook(*args, **kwargs)

        def service_failure_hook(self, *args: Any, **kwargs: Any) -> None:
            if litellm.service_callback:
                super().service_failure_hook(*args, **kwargs)

    logging_utils._service_logger = OnlyWhenConfigured()  # type: ignore[assignment]
