"""The bundled local models: pinned weights, llama.cpp served on loopback, reached via LiteLLM.

``local/<name>`` in a sweep resolves (pipeline.models.routes) to LiteLLM's OpenAI-compatible path at
a server that the sweep starts on every Ray node (pipeline.execution.services, pipeline.local.host).
Nothing else in the pipeline knows a model is local.
"""

from collections.abc import Callable, Iterable

from pipeline.local.catalog import (
    DEFAULT_ALIAS,
    LOCAL_PROVIDER,
    LocalModelSpec,
    known_local_names,
    local_model,
    local_models,
)
from pipeline.local.route import LOCAL_SERVICE_PREFIX, local_route
from pipeline.local.weights import WeightsError, ensure_weights, model_cache
from pipeline.models.routes import ModelRoute


class LocalRuntimeMissing(RuntimeError):
    """A sweep names a local model but the runtime (xllamacpp) is not installed."""


def prepare(routes: Iterable[ModelRoute], progress: Callable[[str], None]) -> None:
    """Before a sweep on this machine: the runtime is installed and every local model's
    weights are fetched and verified (so a first run shows its progress, and fails early)."""
    from pipeline.local.server import RUNTIME_MISSING, runtime_installed

    names = sorted({r.node_service.removeprefix(LOCAL_SERVICE_PREFIX) for r in routes
                    if r.node_service and r.node_service.startswith(LOCAL_SERVICE_PREFIX)})
    if names and not runtime_installed():
        raise LocalRuntimeMissing(RUNTIME_MISSING)
    for name in names:
        ensure_weights(local_model(f"{LOCAL_PROVIDER}/{name}"), progress=progress)


__all__ = [
    "DEFAULT_ALIAS",
    "LOCAL_PROVIDER",
    "LocalModelSpec",
    "LocalRuntimeMissing",
    "WeightsError",
    "ensure_weights",
    "known_local_names",
    "local_model",
    "local_models",
    "local_route",
    "model_cache",
    "prepare",
]
