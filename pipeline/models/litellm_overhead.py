"""LiteLLM's per-call bookkeeping that nothing reads here, made cheap: its success-logging
thread.

We record a call's cost only when the provider reports it (``client._reported_cost``), never
LiteLLM's estimate, and we log calls ourselves. LiteLLM's bookkeeping feeds its callbacks, so
it is left alone as soon as a user configures one (``logging_configured``). Without one:

- **Logging**: LiteLLM's sync ``completion`` submits its success handler to a thread pool after
  every call (a bounded pool behind a semaphore: a lock convoy under many trial threads) and
  has no public switch for it. ``quiet_call`` runs the call as LiteLLM runs its own nested
  calls (``litellm._internal_context.internal_sub_call``): nothing is submitted. If a LiteLLM
  release drops that context, calls run as before (logged); a test counts the submissions.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

CALLBACK_SETTINGS = ("callbacks", "success_callback", "failure_callback", "input_callback",
                     "service_callback", "_async_success_callback", "_async_failure_callback",
                     "_async_input_callback")
"""LiteLLM's module-level callback lists; any entry means a user wants its logging."""
CALLBACK_OPTIONS = ("callbacks", "success_callback", "failure_callback")
"""Per-call options that configure callbacks for one call."""


def logging_configured(litellm: Any, options: Mapping[str, Any] | None = None) -> bool:
    """Whether a LiteLLM callback is configured, globally or in this call's ``options``."""
    if any(getattr(litellm, name, None) for name in CALLBACK_SETTINGS):
        return True
    return options is not None and any(options.get(name) for name in CALLBACK_OPTIONS)


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
