"""Where the judge's calls go: the model's own call options, and for a route that needs a
node service (the bundled local models) that service, run in this process for the command."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from pipeline.execution.services import serve_here
from pipeline.models.call_params import call_params_of
from pipeline.models.config import ModelConfig


@contextmanager
def judge_endpoint(model: ModelConfig, slots: int = 1,
                   say: Callable[[str], None] = lambda _: None) -> Iterator[dict[str, Any]]:
    """Per-call options for ``model`` (resolved) while the block runs."""
    params = call_params_of(model)
    route = model.route
    if model.api_base or route is None or route.node_service is None:
        yield params
        return
    say(f"starting {route.node_service} for the judge")
    with serve_here(route.node_service, slots) as api_base:
        yield {**params, "api_base": api_base}
