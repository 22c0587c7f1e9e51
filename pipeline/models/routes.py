"""Model routes: how a model name under test is reached through LiteLLM.

Most names are LiteLLM model strings already (``openai/gpt-4o-mini``, ``reference/golden``):
their route is the name itself. A registered provider (``pipeline.models.providers``) may instead
map a
name to another LiteLLM model string plus per-call options, and may ask for a *node service*:
a server started on every Ray node for the sweep, whose address each worker adds to its calls
(the bundled local models: ``local/<name>`` becomes ``openai/<name>`` at the node's own
llama.cpp server). Resolution happens once, when a sweep is planned; the trial path then calls
LiteLLM with what the route says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

CALL_TAG_KEY = "agentsweep_call"
"""Every call carries its tag (purpose, turn) in LiteLLM ``metadata`` and, when the call has an
``extra_body``, in the request body. Real providers ignore it; scripted models answer by it."""


@dataclass(frozen=True)
class AgentAdaptation:
    """How the built-in agent adapts its dialog to a model that needs it (the bundled local
    model): a property of the route, named in the model's provenance, never a default for
    other providers."""

    name: str
    """Its name and version, as the model's ``system_fingerprint`` records it."""
    system_note: str | None = None
    """A line appended to the agent's system prompt for planner calls."""
    nudge: str | None = None
    """After a tool result, an empty reply (no text, no tool call) is asked once more with
    this trailing system message (recorded as a ``nudge`` event) instead of ending the dialog
    as ``empty_response``."""


@dataclass(frozen=True)
class ModelRoute:
    litellm_model: str
    """The model string LiteLLM is called with."""
    call_params: Mapping[str, Any] = field(default_factory=dict)
    """Per-call LiteLLM options that are not generation params (not part of trial identity)."""
    default_params: Mapping[str, Any] = field(default_factory=dict)
    """Generation params applied unless the sweep sets them (part of trial identity)."""
    node_service: str | None = None
    """A per-node server this route needs (its name for ``pipeline.execution.services``), or
    None."""
    structured_output: bool | None = None
    """Whether the endpoint honours ``response_format`` with a JSON Schema; None = ask
    LiteLLM's model table."""
    timeout_s: float | None = None
    """Default per-call timeout for the route; None = the sweep's default."""
    agent_adaptation: AgentAdaptation | None = None
    """How the built-in agent adapts to this model; None for every provider but the bundled
    local models."""
