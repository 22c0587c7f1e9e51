"""What an external agent is given for one trial (the contract of docs/agents.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AgentSession:
    """One trial, as an external agent sees it.

    ``model`` is the name to ask the gateway for; the gateway answers with the grid cell's
    model (``model_name``) whatever the name. ``model_base_url`` and ``api_key`` are an
    OpenAI-compatible endpoint for this trial only; ``tools`` are the domain's tools as
    OpenAI function schemas; ``call_tool(name, arguments)`` runs one in the trial's sandbox
    and returns its result as JSON text; ``tools_url`` serves the same over HTTP
    (``POST <tools_url>/<name>``)."""

    trial_id: str
    model: str
    model_name: str
    model_base_url: str
    api_key: str
    system_prompt: str
    tools: list[dict[str, Any]]
    tools_url: str
    call_tool: Callable[[str, dict[str, Any]], str] = field(repr=False)
    max_steps: int = 8
    """Model calls the gateway takes in one user turn; one more ends the trial (step_limit)."""
    mcp: Callable[[], str | None] = field(default=lambda: None, repr=False)
    """Starts the process's MCP server on first use (see ``mcp_url``)."""

    @property
    def mcp_url(self) -> str | None:
        """The trial's tools as an MCP server (streamable HTTP, the same bearer key); None when
        the ``mcp`` package is not installed (the ``agents`` extra). The server starts when an
        agent first asks for it."""
        return self.mcp()

    def as_json(self) -> dict[str, Any]:
        """The session as an HTTP agent's ``POST /sessions`` gets it (no ``call_tool``)."""
        return {"trial_id": self.trial_id, "model": self.model, "model_name": self.model_name,
                "model_base_url": self.model_base_url, "api_key": self.api_key,
                "system_prompt": self.system_prompt, "tools": self.tools,
                "tools_url": self.tools_url, "mcp_url": self.mcp_url,
                "max_steps": self.max_steps}
