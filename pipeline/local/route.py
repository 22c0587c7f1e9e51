"""How ``local/<name>`` is reached: LiteLLM's OpenAI-compatible path to the node's server."""

from __future__ import annotations

from pipeline.local.adapter import LOCAL_AGENT
from pipeline.local.catalog import local_model
from pipeline.models.providers import ModelProvider
from pipeline.models.routes import ModelRoute

NO_KEY = "no-key"
"""LiteLLM's openai provider refuses to call without a key; the local server needs none."""
LOCAL_SERVICE_PREFIX = "local-model:"
DEFAULT_MAX_TOKENS = 768
CALL_TIMEOUT_S = 900.0
"""A local call may queue behind every other trial on the node's few slots."""


def local_route(model: str) -> ModelRoute:
    spec = local_model(model)
    return ModelRoute(
        litellm_model=f"openai/{spec.name}",
        call_params={"api_key": NO_KEY},
        default_params={"max_tokens": DEFAULT_MAX_TOKENS},
        node_service=f"{LOCAL_SERVICE_PREFIX}{spec.name}",
        structured_output=True,
        timeout_s=CALL_TIMEOUT_S,
        agent_adaptation=LOCAL_AGENT,
    )


class LocalProvider(ModelProvider):
    """``local/<name>``: registered in ``pipeline.models.providers``; only its route differs from a
    plain OpenAI-compatible provider (the node's server is started by
    ``pipeline.execution.services``)."""

    access = "local_server"

    def route(self, model: str) -> ModelRoute:
        return local_route(model)
