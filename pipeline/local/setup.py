"""Before a sweep on this machine: the local models it names are runnable here."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pipeline.local.catalog import local_model
from pipeline.local.names import LOCAL_PROVIDER
from pipeline.local.route import LOCAL_SERVICE_PREFIX
from pipeline.local.weights import ensure_weights
from pipeline.models.routes import ModelRoute


class LocalRuntimeMissing(RuntimeError):
    """A sweep names a local model but the runtime (xllamacpp) is not installed."""


def prepare(routes: Iterable[ModelRoute], progress: Callable[[str], None]) -> None:
    """The runtime is installed and every local model's weights are fetched and verified (so a
    first run shows its progress, and fails early)."""
    from pipeline.local.server import RUNTIME_MISSING, runtime_installed

    names = sorted({r.node_service.removeprefix(LOCAL_SERVICE_PREFIX) for r in routes
                    if r.node_service and r.node_service.startswith(LOCAL_SERVICE_PREFIX)})
    if names and not runtime_installed():
        raise LocalRuntimeMissing(RUNTIME_MISSING)
    for name in names:
        ensure_weights(local_model(f"{LOCAL_PROVIDER}/{name}"), progress=progress)
